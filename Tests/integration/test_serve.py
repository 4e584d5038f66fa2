"""hcigatt serve (the peripheral role) against Bumble centrals and against hcigatt itself."""
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from peer import HCIGATT, PYTHON, ROOT, Peer, hcigatt, json_lines, measurement_lines

CENTRALS = os.path.join(ROOT, 'Tests', 'peer', 'bumble_centrals.py')
EIGHT_BALL_ANSWER = '8BA11002-1D7E-4D2E-9F3A-0B8BA1100000'
ALL_PROFILES = 'thermometer,bloodpressure,heartrate,battery,device-info,sensortag-keys,8ball'


class Serve:
    """A running `hcigatt serve --json`; its event lines are read on a thread."""

    def __init__(self, transport, *args):
        self.log = tempfile.TemporaryFile(mode='w+')
        self.proc = subprocess.Popen([HCIGATT, 'serve', '--transport', transport, '--json', *args],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.events = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        if self.wait('advertising', 15) is None:
            self.close()
            raise RuntimeError(f'hcigatt serve did not start advertising: {self.stderr()}')

    def _read(self):
        for line in self.proc.stdout:
            if line.strip():
                with self.cond:
                    self.events.append(json.loads(line))
                    self.cond.notify_all()

    def wait(self, event, timeout, **match):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for e in self.events:
                    if e['event'] == event and all(e.get(k) == v for k, v in match.items()):
                        return e
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self.thread.is_alive():
                    return None
                self.cond.wait(left)

    def all(self, event):
        with self.cond:
            return [e for e in self.events if e['event'] == event]

    def stderr(self):
        if self.log.closed:
            return ''
        self.log.seek(0)
        return self.log.read()

    def close(self):
        """SIGINT, as Ctrl-C: serve stops advertising, disconnects and exits 0."""
        rc = self.proc.poll()
        if self.log.closed:
            return rc
        if rc is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                rc = self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
        self.thread.join(timeout=5)
        self.proc.stdout.close()
        self.log.close()
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Centrals:
    """bumble_centrals.py: the controller for hcigatt plus N Bumble centrals."""

    def __init__(self, *args):
        self.log = tempfile.TemporaryFile(mode='w+')
        self.proc = subprocess.Popen([PYTHON, CENTRALS, *args], stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, cwd=os.path.dirname(CENTRALS))
        line = self.proc.stdout.readline()
        if not line:
            self.log.seek(0)
            raise RuntimeError(f'bumble centrals did not start: {self.log.read()}')
        self.port = json.loads(line)['port']
        self.transport = f'tcp:127.0.0.1:{self.port}'

    def results(self, count, timeout=120):
        """The result line of each of `count` centrals."""
        lines = []
        deadline = time.monotonic() + timeout
        while len(lines) < count and time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            lines.append(json.loads(line))
        self.log.seek(0)
        return lines, self.log.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


class BumbleCentralTests(unittest.TestCase):
    def test_two_bumble_centrals_discover_read_write_and_subscribe_every_profile(self):
        centrals = Centrals('--centrals', '2', '--target', 'Serve-1', '--listen', '6',
                            '--write', '2A21=0200',   # 2 s: inside the Valid Range 1...60
                            '--write', '2A21=3d00',   # 61 s: Out of Range (0xFF)
                            '--write', '2A00=41',     # Device Name is read-only here
                            '--write', '2A19=10',     # Battery Level too
                            '--write', '2A39=01',     # Heart Rate Control Point: reset
                            '--write', '2A39=02',     # not a defined command: 0x80
                            '--write', f'8BA11001-1D7E-4D2E-9F3A-0B8BA1100000!={b"Rain?".hex()}')
        try:
            with Serve(centrals.transport, '--profile', ALL_PROFILES, '--name', 'Serve-1') as serve:
                results, log = centrals.results(2)
                self.assertEqual(len(results), 2, log)
                for r in results:
                    self.assertIsNone(r['error'], f'central {r["central"]}: {r["error"]}\n{log}\n{serve.stderr()}')
                    self.check_central(r)
                # What serve printed, per client.
                connected = serve.all('connected')
                self.assertEqual(len(connected), 2, serve.events)
                self.assertEqual({e['mtu'] for e in serve.all('mtu')}, {517})
                self.assertIsNotNone(serve.wait('confirmed', 5, uuid='2A1C'))
                self.assertIsNotNone(serve.wait('confirmed', 5, uuid='2A35'))
                self.assertIsNotNone(serve.wait('write', 5, uuid='2A21', value='0200'))
                self.assertIsNone(serve.wait('write', 0, uuid='2A21', value='3d00'), 'a refused write is not reported as written')
                # The centrals asked before subscribing to the answer: asked, not answered.
                self.assertEqual([e['question'] for e in serve.all('question')], ['Rain?', 'Rain?'])
                self.assertEqual(serve.all('answer'), [])
                self.assertEqual(len([e for e in serve.all('note') if 'without subscribing' in e['message']]), 2)
                subs = {(e['client'], e['uuid']) for e in serve.all('subscription') if e['notify'] or e['indicate']}
                for c in connected:
                    for uuid in ('2A1C', '2A37', 'FFE1', '2A35'):
                        self.assertIn((c['client'], uuid), subs)
                self.assertIsNotNone(serve.wait('disconnected', 10))
                deadline = time.monotonic() + 10
                while len(serve.all('disconnected')) < 2 and time.monotonic() < deadline:
                    time.sleep(0.1)
                self.assertEqual(len(serve.all('disconnected')), 2)
                self.assertEqual(serve.close(), 0, serve.stderr())
        finally:
            centrals.close()

    def test_extended_advertising_carries_a_long_name_and_every_uuid(self):
        # 40 bytes of name: legacy advertising would shorten it; extended carries it whole.
        name = 'Extended-advertising-peripheral-with-a-l'
        centrals = Centrals('--centrals', '1', '--target', name, '--listen', '1', '--extended-advertising')
        try:
            with Serve(centrals.transport, '--profile', 'battery,heartrate,thermometer', '--name', name,
                       '--extended', '--tx-power', '-6') as serve:
                adv = serve.wait('advertising', 1)
                self.assertEqual(adv['pdus'], 'extended')
                self.assertIn('tx_power', adv)   # what the controller chose
                results, log = centrals.results(1)
                self.assertEqual(len(results), 1, log)
                self.assertIsNone(results[0]['error'], f'{results[0]["error"]}\n{log}\n{serve.stderr()}')
                self.assertEqual(bytes.fromhex(results[0]['reads']['2A00']), name.encode())
                self.assertEqual(results[0]['reads']['2A19'], '64')
                self.assertIsNotNone(serve.wait('connected', 5))
                self.assertEqual(serve.close(), 0, serve.stderr())
        finally:
            centrals.close()

    def test_security_encrypted_refuses_until_the_central_pairs(self):
        for pair in (False, True):
            args = ['--centrals', '1', '--target', 'Secure-1', '--listen', '1'] + (['--pair'] if pair else [])
            centrals = Centrals(*args)
            try:
                with Serve(centrals.transport, '--profile', 'battery,device-info', '--name', 'Secure-1',
                           '--security', 'encrypted') as serve:
                    results, log = centrals.results(1)
                    self.assertEqual(len(results), 1, log)
                    r = results[0]
                    if not pair:
                        # Every value refused: Insufficient Encryption (0x0F); the name (GAP) is open.
                        self.assertEqual(r['reads']['2A19'], 'error 0x0f', r)
                        self.assertEqual(r['reads']['2A29'], 'error 0x0f', r)
                        self.assertEqual(bytes.fromhex(r['reads']['2A00']), b'Secure-1')
                    else:
                        self.assertIsNone(r['error'], f'{r["error"]}\n{log}\n{serve.stderr()}')
                        self.assertTrue(r['paired'])
                        self.assertEqual(r['reads']['2A19'], '64')
                        self.assertEqual(bytes.fromhex(r['reads']['2A29']), b'hcigatt')
                        paired = serve.wait('paired', 5)
                        self.assertIsNotNone(paired, serve.events)
                        self.assertTrue(paired['secure_connections'] and paired['bonded'])
                        self.assertEqual(paired['method'], 'Just Works')
                    self.assertEqual(serve.close(), 0, serve.stderr())
            finally:
                centrals.close()

    def test_a_bonded_central_gets_its_subscriptions_back_and_learns_of_a_changed_database(self):
        # Core Vol 3 Part G §3.3.3.3 (CCCDs persist for bonded clients; GATT/SR/GAN/BV-03-C)
        # and §7.1 (a bonded client that missed a change gets Service Changed), across runs
        # of serve and of the central, which keep their keys in files.
        with tempfile.TemporaryDirectory() as tmp:
            bonds = os.path.join(tmp, 'bonds')
            keys = os.path.join(tmp, 'central-keys.json')

            def world(profiles, *central_args):
                centrals = Centrals('--centrals', '1', '--target', 'Bond-1', '--listen', '2.5', '--keystore', keys,
                                    *central_args)
                try:
                    with Serve(centrals.transport, '--profile', profiles, '--name', 'Bond-1', '--bond-dir', bonds) as serve:
                        results, log = centrals.results(1)
                        self.assertEqual(len(results), 1, log)
                        r = results[0]
                        self.assertIsNone(r['error'], f'{r["error"]}\n{log}\n{serve.stderr()}')
                        restored = serve.wait('bond-restored', 1)
                        self.assertEqual(serve.close(), 0, serve.stderr())
                        return r, restored
                finally:
                    centrals.close()

            def handle_of(r, uuid):
                return next(c['handle'] for s in r['services'] for c in s['characteristics'] if c['uuid'] == uuid)

            # 1: pair, subscribe to Heart Rate Measurement and Service Changed, leave both on.
            r, restored = world('heartrate', '--pair', '--keep-subscribed', '--subscribe-service-changed')
            self.assertTrue(r['paired'])
            self.assertTrue(r['values']['2A37'], r)
            self.assertIsNone(restored, 'nothing to restore for a new bond')
            self.assertIn('D0D1D2D3D401-public.gatt-server', os.listdir(bonds))
            hrm = handle_of(r, '2A37')
            # 2: a new serve with the same database; encrypting with the bond brings both back:
            # notifications arrive though this run writes no CCCD.
            r, restored = world('heartrate', '--encrypt', '--no-subscribe', '--record')
            self.assertTrue(r['encrypted'])
            self.assertEqual((restored['subscriptions'], restored['service_changed']), (2, False), restored)
            notified = [x for x in r['received'] if x['kind'] == 'notification' and x['handle'] == hrm]
            self.assertTrue(notified, r['received'])
            self.assertTrue(all(x['t'] >= r['encrypted_at'] - 0.05 for x in notified), 'nothing before encryption')
            self.assertFalse([x for x in r['received'] if x['kind'] == 'indication'], 'no Service Changed: nothing changed')
            # 3: the database changed (Battery first moves every handle): Service Changed for
            # the whole range; the old subscriptions are gone (their handles mean other things).
            r, restored = world('battery,heartrate', '--encrypt', '--no-subscribe', '--record')
            self.assertEqual((restored['subscriptions'], restored['service_changed']), (1, True), restored)
            indications = [x for x in r['received'] if x['kind'] == 'indication']
            self.assertEqual([x['value'] for x in indications], ['0100ffff'], r['received'])
            self.assertFalse([x for x in r['received'] if x['kind'] == 'notification'], r['received'])
            # Forgetting the bond forgets the rest.
            rc, out, err = hcigatt('unpair', 'D0:D1:D2:D3:D4:01', '--bond-dir', bonds)
            self.assertEqual(rc, 0, err)
            self.assertEqual(os.listdir(bonds), [])

    def check_central(self, r):
        self.assertEqual(r['mtu'], 517)
        uuids = [s['uuid'] for s in r['services']]
        self.assertEqual(uuids, ['1800', '1801', '1809', '1810', '180D', '180F', '180A', 'FFE0',
                                 '8BA11000-1D7E-4D2E-9F3A-0B8BA1100000'])
        chars = {c['uuid']: c for s in r['services'] for c in s['characteristics']}
        # Properties as the profiles define them; CCCDs where they notify or indicate.
        self.assertEqual(chars['2A1C']['properties'], 0x20)
        self.assertEqual(chars['2A21']['properties'], 0x2A)
        self.assertEqual(chars['2A21']['descriptors'], ['2902', '2906'])
        self.assertEqual(chars['2A37']['properties'], 0x10)
        self.assertEqual(chars['FFE1']['descriptors'], ['2902', '2901'])
        reads = r['reads']
        self.assertEqual(bytes.fromhex(reads['2A00']), b'Serve-1')
        self.assertEqual(reads['2A1D'], '02')                 # body
        self.assertEqual(reads['2A21/2906'], '01003c00')      # Valid Range 1...60 s
        self.assertEqual(reads['2A38'], '01')                 # chest
        self.assertEqual(reads['2A19'], '64')                 # 100 %
        self.assertEqual(bytes.fromhex(reads['2A29']), b'hcigatt')
        self.assertEqual(bytes.fromhex(reads['FFE1/2901']), b'Key Press State')
        self.assertEqual(len(bytes.fromhex(reads['2B2A'])), 16)  # Database Hash
        writes = {(w['uuid'], w['value']): w for w in r['writes']}
        self.assertIsNone(writes[('2A21', '0200')]['error'])
        self.assertEqual(writes[('2A21', '0200')]['read_back'], '0200')
        self.assertEqual(writes[('2A21', '3d00')]['error'], 0xFF)
        self.assertEqual(writes[('2A00', '41')]['error'], 0x03)    # Write Not Permitted
        self.assertEqual(writes[('2A19', '10')]['error'], 0x03)
        self.assertIsNone(writes[('2A39', '01')]['error'])
        self.assertEqual(writes[('2A39', '02')]['error'], 0x80)    # Control Point Not Supported
        values = r['values']
        self.assertGreaterEqual(len(values['2A1C']), 1, values)    # indications, every 2 s
        for v in values['2A1C']:
            b = bytes.fromhex(v)
            self.assertEqual(b[0], 0x06)                           # Celsius, timestamp, type
            self.assertEqual(b[4], 0xFF)                           # FLOAT exponent -1
            self.assertTrue(355 <= int.from_bytes(b[1:4], 'little') <= 375)
        self.assertGreaterEqual(len(values['2A1E']), 3)
        self.assertGreaterEqual(len(values['2A37']), 3)
        self.assertTrue(all(bytes.fromhex(v)[0] == 0x1E for v in values['2A37']))
        self.assertGreaterEqual(len(values['FFE1']), 5)
        self.assertGreaterEqual(len(values['2A36']), 3)
        self.assertGreaterEqual(len(values['2A35']), 1)
        answers = values[EIGHT_BALL_ANSWER]
        self.assertEqual(answers, [], 'the answer was notified before the central subscribed')


class HcigattAgainstServeTests(unittest.TestCase):
    """hcigatt's own client (gatt, read, write, subscribe, ask) against hcigatt serve."""

    def test_a_bonded_devices_database_is_kept_and_checked_by_its_hash(self):
        # Robust caching (Core Vol 3 Part G §2.5.2): the database kept with the bond is reused
        # after one read of the Database Hash, and discovered again when the hash changed.
        with tempfile.TemporaryDirectory() as tmp:
            bonds, server_bonds = os.path.join(tmp, 'client'), os.path.join(tmp, 'server')
            cache = os.path.join(bonds, 'C0FFEE000001-public.gatt-cache')
            with Peer('--hosts', '2') as world:
                server, client = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])

                def gatt(*extra):
                    rc, out, err = hcigatt('gatt', 'Cache-1', '--json', '--no-values', '--bond-dir', bonds,
                                           '--transport', client, *extra)
                    self.assertEqual(rc, 0, err)
                    return json.loads(out), err

                with Serve(server, '--profile', 'heartrate', '--name', 'Cache-1', '--bond-dir', server_bonds):
                    r, _ = gatt()
                    self.assertEqual(r['database_source'], 'discovered')
                    self.assertFalse(os.path.exists(cache), 'no bond, nothing kept')
                    full = r['discovery_round_trips']
                    rc, out, err = hcigatt('pair', 'Cache-1', '--bond-dir', bonds, '--transport', client)
                    self.assertEqual(rc, 0, err)
                    r, _ = gatt()
                    self.assertEqual(r['database_source'], 'discovered')
                    self.assertTrue(os.path.exists(cache))
                    again, err = gatt()
                    self.assertEqual(again['database_source'], 'cache-hash-unchanged', err)
                    self.assertIn('cached (Database Hash unchanged)', err)
                    self.assertEqual(again['services'], r['services'])
                    # Exchange MTU and the hash read, against the whole discovery.
                    self.assertEqual(again['discovery_round_trips'], 2)
                    self.assertGreater(full, 4)
                    fresh, _ = gatt('--no-cache')
                    self.assertEqual((fresh['database_source'], fresh['discovery_round_trips']), ('discovered', full))
                with Serve(server, '--profile', 'battery,heartrate', '--name', 'Cache-1', '--bond-dir', server_bonds):
                    changed, err = gatt()
                    self.assertEqual(changed['database_source'], 'rediscovered', err)
                    self.assertIn('Database Hash changed', err)
                    self.assertIn('180F', [s['uuid'] for s in changed['services']])
                    again, err = gatt()
                    self.assertEqual(again['database_source'], 'cache-hash-unchanged', err)
                    self.assertEqual(again['services'], changed['services'])

    def test_serve_with_privacy_is_known_behind_its_private_addresses_once_bonded(self):
        # Core Vol 3 Part C §10.7: serve advertises from RPAs made with its IRK, which bonding
        # gives the central with the public identity; a stranger sees only the RPA.
        with tempfile.TemporaryDirectory() as tmp:
            server_bonds, client_bonds = os.path.join(tmp, 'server'), os.path.join(tmp, 'client')
            with Peer('--hosts', '2') as world:
                server, client = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])

                def seen():
                    rc, out, err = hcigatt('scan', '--json', '--duration', '1.5', '--bond-dir', client_bonds,
                                           '--transport', client)
                    self.assertEqual(rc, 0, err)
                    return [d for d in json_lines(out) if d.get('name') == 'Private-1']

                args = ('--profile', 'battery', '--name', 'Private-1', '--privacy', '--bond-dir', server_bonds)
                with Serve(server, *args) as serve:
                    advertised = serve.wait('advertising', 1)['address']
                    self.assertTrue(advertised.endswith('(resolvable-private)'), advertised)
                    first = seen()
                    self.assertTrue(first, 'the RPA advertiser was seen')
                    self.assertEqual(first[0]['address_kind'], 'resolvable-private')
                    self.assertNotIn('identity', first[0], 'a stranger does not know who it is')
                    rc, out, err = hcigatt('pair', 'Private-1', '--json', '--bond-dir', client_bonds, '--transport', client)
                    self.assertEqual(rc, 0, err)
                    r = json.loads(out)
                    self.assertEqual(r['identity'], 'C0:FF:EE:00:00:01 (public)')
                    self.assertIn('irk', r['keys'])
                    self.assertEqual(serve.close(), 0, serve.stderr())
                self.assertIn('local.irk', os.listdir(server_bonds))
                with Serve(server, *args) as serve:
                    now = seen()
                    self.assertTrue(now)
                    self.assertNotEqual(now[0]['address'], first[0]['address'], 'a new run, a new private address')
                    self.assertEqual((now[0]['identity'], now[0]['identity_type']), ('C0:FF:EE:00:00:01', 'public'))
                    rc, out, err = hcigatt('read', 'C0:FF:EE:00:00:01', '2a19', '--json', '--bond-dir', client_bonds,
                                           '--transport', client)
                    self.assertEqual(rc, 0, err)
                    self.assertIn('is a private address of C0:FF:EE:00:00:01', err)
                    self.assertEqual(json.loads(out)['hex'], '64')

    def test_signed_writes_from_a_bonded_client_on_an_unencrypted_link(self):
        # Core Vol 3 Part G §4.9.2: the client signs with the CSRK it gave when bonding and a
        # growing SignCounter; the server verifies both, each side keeps its counter.
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, 'db.json')
            with open(db, 'w') as f:
                json.dump({'services': [{'uuid': '181A', 'characteristics': [
                    {'uuid': '2A6F', 'properties': ['read', 'authenticated-signed-writes'], 'value': [0, 0]}]}]}, f)
            server_bonds, client_bonds = os.path.join(tmp, 'server'), os.path.join(tmp, 'client')
            with Peer('--hosts', '2') as world:
                server, client = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
                with Serve(server, '--db', db, '--name', 'Signed', '--bond-dir', server_bonds) as serve:
                    rc, out, err = hcigatt('write', 'Signed', '2a6f', '0102', '--signed', '--bond-dir', client_bonds,
                                           '--transport', client)
                    self.assertEqual(rc, 1)
                    self.assertIn('pair first', err)
                    rc, out, err = hcigatt('pair', 'Signed', '--json', '--bond-dir', client_bonds, '--transport', client)
                    self.assertEqual(rc, 0, err)
                    self.assertIsNotNone(serve.wait('paired', 5))
                    for counter, value in enumerate(('0102', '0304')):
                        rc, out, err = hcigatt('write', 'Signed', '2a6f', value, '--signed', '--bond-dir', client_bonds,
                                               '--transport', client)
                        self.assertEqual(rc, 0, err)
                        self.assertIn(f'signed (SignCounter {counter})', err)
                        self.assertIsNotNone(serve.wait('write', 5, value=value, with_response=False), serve.events)
                    self.assertFalse(serve.all('peer-fault'), serve.events)
                    rc, out, err = hcigatt('read', 'Signed', '2a6f', '--json', '--transport', client)
                    self.assertEqual(json.loads(out)['hex'], '0304')
                    self.assertEqual(serve.close(), 0, serve.stderr())
            with open(os.path.join(client_bonds, 'C0FFEE000001-public.sign-counters')) as f:
                self.assertIn('local=1', f.read())
            with open(os.path.join(server_bonds, 'C0FFEE000002-public.sign-counters')) as f:
                self.assertIn('peer=1', f.read())

    def test_gatt_read_write_subscribe_and_ask(self):
        with Peer('--hosts', '2') as world:
            server, client = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            with Serve(server, '--profile', '8ball,thermometer,heartrate,battery', '--name', '8ball') as serve:
                rc, out, err = hcigatt('gatt', '8ball', '--json', '--transport', client)
                self.assertEqual(rc, 0, err)
                db = json.loads(out)
                self.assertEqual(db['mtu'], 517)
                self.assertEqual([s['uuid'] for s in db['services']],
                                 ['1800', '1801', '8BA11000-1D7E-4D2E-9F3A-0B8BA1100000', '1809', '180D', '180F'])
                by_uuid = {c['uuid']: c for s in db['services'] for c in s['characteristics']}
                self.assertEqual(by_uuid['2A00']['value']['text'], '8ball')

                rc, out, err = hcigatt('read', '8ball', '2a19', '--json', '--transport', client)
                self.assertEqual(rc, 0, err)
                self.assertEqual(json.loads(out)['hex'], '64')

                rc, out, err = hcigatt('write', '8ball', '2a21', '0300', '--transport', client)
                self.assertEqual(rc, 0, err)
                self.assertIsNotNone(serve.wait('write', 5, uuid='2A21', value='0300'))
                rc, out, err = hcigatt('write', '8ball', '2a21', 'ff00', '--transport', client)
                self.assertEqual(rc, 1)
                self.assertIn('Out of Range (0xFF)', err)
                rc, out, err = hcigatt('write', '8ball', '2a00', '41', '--transport', client)
                self.assertEqual(rc, 1)
                self.assertIn('Write Not Permitted', err)

                rc, out, err = hcigatt('subscribe', '8ball', '2a1c', '2a37', '--count', '6', '--json',
                                       '--transport', client, timeout=60)
                self.assertEqual(rc, 0, err)
                values = measurement_lines(out)
                kinds = {(v['uuid'], v['kind']) for v in values}
                self.assertIn(('2A1C', 'indication'), kinds)
                self.assertIn(('2A37', 'notification'), kinds)
                self.assertIsNotNone(serve.wait('confirmed', 5, uuid='2A1C'))

                # The 8-Ball answers the client that asked: found by its service, then by name.
                rc, out, err = hcigatt('ask', 'Will it work?', '--json', '--transport', client)
                self.assertEqual(rc, 0, err)
                answer = json.loads(out)
                self.assertEqual(answer['question'], 'Will it work?')
                self.assertIn(answer['answer'], EIGHT_BALL_ANSWERS)
                rc, out, err = hcigatt('ask', '8ball', 'And now?', '--transport', client)
                self.assertEqual(rc, 0, err)
                self.assertIn(out.strip(), EIGHT_BALL_ANSWERS)
                questions = [e['question'] for e in serve.all('question')]
                self.assertEqual(questions, ['Will it work?', 'And now?'])
                self.assertEqual(serve.close(), 0, serve.stderr())

    def test_gatt_finds_an_extended_advertiser_by_its_long_name(self):
        name = 'A-peripheral-name-too-long-for-legacy-advertising'
        with Peer('--hosts', '2', '--extended-advertising') as world:
            server, client = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            with Serve(server, '--profile', 'battery', '--name', name, '--extended') as serve:
                rc, out, err = hcigatt('read', name, '2a00', '--json', '--transport', client)
                self.assertEqual(rc, 0, err)
                self.assertEqual(bytes.fromhex(json.loads(out)['hex']), name.encode())
                self.assertEqual(serve.close(), 0, serve.stderr())

    def test_manual_answers_come_from_stdin(self):
        with Peer('--hosts', '2') as world:
            server, client = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            log = tempfile.TemporaryFile(mode='w+')
            proc = subprocess.Popen([HCIGATT, 'serve', '--transport', server, '--profile', '8ball', '--name', 'm8',
                                     '--manual'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
            try:
                self.assertIn('advertising', proc.stdout.readline())
                proc.stdin.write('Typed by a person.\n')
                proc.stdin.flush()
                rc, out, err = hcigatt('ask', 'm8', 'Who answers?', '--transport', client)
                self.assertEqual(rc, 0, err)
                self.assertEqual(out.strip(), 'Typed by a person.')
            finally:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=15)

    def test_usage_errors(self):
        for args in (['serve'], ['serve', '--profile', 'toaster'], ['serve', '--profile', 'battery', 'extra'],
                     ['serve', '--profile', 'battery', '--max-connections', '0'],
                     ['serve', '--profile', 'battery', '--adv-interval', '5'],
                     ['serve', '--profile', 'battery', '--manual'], ['ask'], ['ask', 'a', 'b', 'c'],
                     ['serve', '--profile', 'battery', '--extended', '--legacy'],
                     ['serve', '--profile', 'battery', '--tx-power', '30'],
                     ['serve', '--profile', 'battery', '--security', 'paranoid']):
            rc, out, err = hcigatt(*args, '--transport', 'tcp:127.0.0.1:1')
            self.assertEqual(rc, 2, f'{args}: {err}')

    def test_db_file_serves_its_database_and_reports_mistakes(self):
        with tempfile.TemporaryDirectory() as tmp:
            good = os.path.join(tmp, 'db.json')
            with open(good, 'w') as f:
                json.dump({'services': [{'uuid': '181A', 'characteristics': [
                    {'uuid': '2A6E', 'properties': ['read', 'notify'], 'value': {'hex': '3408'},
                     'descriptors': [{'uuid': '2901', 'value': 'Outside'}]},
                    {'uuid': '2A6F', 'properties': ['read', 'write'], 'value': [0x10, 0x27], 'max_length': 2}]}]}, f)
            bad = os.path.join(tmp, 'bad.json')
            with open(bad, 'w') as f:
                f.write('{"services": [{"uuid": "181A", "characteristics": [{"uuid": "2A6E", "properties": ["reed"]}]}]}')
            rc, out, err = hcigatt('serve', '--db', bad, '--transport', 'tcp:127.0.0.1:1')
            self.assertEqual(rc, 1)
            self.assertIn('services[0].characteristics[0].properties[0]', err)
            with open(bad, 'w') as f:
                f.write('{"services": [')
            rc, out, err = hcigatt('serve', '--db', bad, '--transport', 'tcp:127.0.0.1:1')
            self.assertEqual(rc, 1)
            self.assertIn('invalid JSON at byte', err)
            with Peer('--hosts', '2') as world:
                server, client = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
                with Serve(server, '--db', good, '--name', 'Env'):
                    rc, out, err = hcigatt('read', 'Env', '2a6e', '--json', '--transport', client)
                    self.assertEqual(rc, 0, err)
                    self.assertEqual(json.loads(out)['hex'], '3408')
                    rc, out, err = hcigatt('write', 'Env', '2a6f', '112233', '--transport', client)
                    self.assertEqual(rc, 1)
                    self.assertIn('Invalid Attribute Value Length', err)


EIGHT_BALL_ANSWERS = [
    "It is certain.", "It is decidedly so.", "Without a doubt.", "Yes definitely.", "You may rely on it.",
    "As I see it, yes.", "Most likely.", "Outlook good.", "Yes.", "Signs point to yes.",
    "Reply hazy, try again.", "Ask again later.", "Better not tell you now.", "Cannot predict now.",
    "Concentrate and ask again.", "Don't count on it.", "My reply is no.", "My sources say no.",
    "Outlook not so good.", "Very doubtful.",
]

class GlucoseMeterTests(unittest.TestCase):
    """serve --profile glucose against a Bumble collector: stored readings through the Record
    Access Control Point (2A52) on an encrypted link, the answers in the order they came."""

    def collect(self, *central_args):
        """One Bumble central that pairs, subscribes, writes what it is given and listens."""
        with tempfile.TemporaryDirectory() as tmp:
            centrals = Centrals('--centrals', '1', '--target', 'Glucose-1', '--listen', '2', '--pair', *central_args)
            try:
                with Serve(centrals.transport, '--profile', 'glucose', '--name', 'Glucose-1',
                           '--bond-dir', os.path.join(tmp, 'bonds')) as serve:
                    results, log = centrals.results(1)
                    self.assertEqual(len(results), 1, log)
                    self.assertIsNone(results[0]['error'], log)
                    self.assertEqual(serve.close(), 0, serve.stderr())
                    return results[0], [e['message'] for e in serve.all('note')]
            finally:
                centrals.close()

    @staticmethod
    def records(arrivals):
        """(sequence number, with context) of each measurement, checking each context comes
        right after its measurement; and the RACP answers."""
        out, answers, last = [], [], None
        for uuid, value in arrivals:
            b = bytes.fromhex(value)
            if uuid == '2A18':
                last = (int.from_bytes(b[1:3], 'little'), bool(b[0] & 0x10))
                out.append(last)
            elif uuid == '2A34':
                assert last is not None and last[1] and int.from_bytes(b[1:3], 'little') == last[0], (arrivals, value)
            elif uuid == '2A52':
                answers.append(value)
        return out, answers

    def test_report_all_records_then_success(self):
        r, notes = self.collect('--write-after-subscribing', '2A52=0101')
        self.assertEqual(r['late_writes'][0]['error'], None, r)
        got, answers = self.records(r['arrivals'])
        self.assertEqual(got, [(n, n % 3 == 0) for n in range(1, 13)], r['arrivals'])
        self.assertEqual(answers, ['06000101'])
        self.assertEqual(r['arrivals'][-1], ['2A52', '06000101'], 'the answer after the last record')
        self.assertIn('glucose records for D0:D1:D2:D3:D4:01 (public), handle 0x0001: 12 records, then response to '
                      'report stored records: success', notes)
        # The features say what the meter detects; the service needs an encrypted link.
        self.assertEqual(r['reads']['2A51'], '0b05')

    def test_a_filter_a_count_no_records_and_a_deletion(self):
        cases = [
            ('0103010a00', [(10, False), (11, False), (12, True)], '06000101'),   # ≥ 10
            ('0401', [], '05000c00'),                                             # how many: 12
            ('0103016400', [], '06000106'),                                       # ≥ 100: none
            ('0202010200', [], '06000201'),                                       # delete ≤ 2
            ('0901', [], '06000902'),                                             # reserved op code
            ('0100', [], '06000103'),                                             # Null operator
        ]
        for request, records, answer in cases:
            with self.subTest(request=request):
                r, _ = self.collect('--write-after-subscribing', f'2A52={request}')
                got, answers = self.records(r['arrivals'])
                self.assertEqual((got, answers), (records, [answer]), r['arrivals'])

    def test_a_collector_not_subscribed_to_contexts_gets_every_measurement(self):
        # The context characteristic is optional for a collector (GLS §3.2.3): the report
        # goes on without the contexts, it does not fail.
        r, _ = self.collect('--skip-subscribe', '2A34', '--write-after-subscribing', '2A52=0101')
        got, answers = self.records(r['arrivals'])
        self.assertEqual(got, [(n, n % 3 == 0) for n in range(1, 13)], r['arrivals'])
        self.assertNotIn('2A34', [uuid for uuid, _ in r['arrivals']])
        self.assertEqual(answers, ['06000101'])

    def test_a_request_before_subscribing_is_refused_with_the_glucose_services_error(self):
        # Glucose Service 1.0: Client Characteristic Configuration Descriptor Improperly
        # Configured is its own ATT error 0x81 (later services use 0xFD).
        r, _ = self.collect('--write', '2A52=0101')
        self.assertEqual(r['writes'][0]['error'], 0x81, r)
        self.assertEqual(self.records(r['arrivals']), ([], []))


if __name__ == '__main__':
    unittest.main()
