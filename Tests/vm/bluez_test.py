#!/usr/bin/env python3
"""hcigatt against BlueZ, the Linux host most other devices run. Runs INSIDE the test VM
(as root; Tests/vm/run-tests boots it): vhci_world.py gives the kernel two adapters on one
virtual link; the kernel's host with bluetoothd (Debian's bluez, its own D-Bus system bus
in the guest) keeps hci0 and hcigatt owns hci1 through the HCI user channel. BlueZ is
driven over D-Bus by bluez_peer.py (Debian's python3 with python3-dbus and python3-gi)
and btmgmt. The tests share one world and run in order.

A bluetoothd that exits (crash) fails the test that was running and every later one;
a kernel BUG, oops or WARNING fails the run (Tests/vm/run-job).
"""
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HCIGATT = os.environ.get('HCIGATT', os.path.join(ROOT, '.build', 'debug', 'hcigatt'))
WORLD = os.path.join(HERE, 'vhci_world.py')
DRIVER = os.path.join(HERE, 'bluez_peer.py')
SYSTEM_PYTHON = '/usr/bin/python3'  # python3-dbus and python3-gi are Debian's
BLUETOOTHD = '/usr/libexec/bluetooth/bluetoothd'

TMP = os.environ.get('TMPDIR', '/tmp')
BLUEZ = 'C0:FF:EE:00:00:01'    # hci0: the kernel's host and bluetoothd
HCIGATT_ADDRESS = 'C0:FF:EE:00:00:02'  # hci1: hcigatt over the user channel
TRANSPORT = ['--transport', 'user:hci1']
BLUEZ_DEVICE = BLUEZ + '/public'
# The application bluetoothd serves for hcigatt in test_5 (GattManager1).
APP_SERVICE = '68636967-6174-7400-8000-00805f9b0100'
APP_TEXT = '68636967-6174-7400-8000-00805f9b0101'
APP_COUNTER = '68636967-6174-7400-8000-00805f9b0102'
APP_SECRET = '68636967-6174-7400-8000-00805f9b0103'
BONDS = os.path.join(TMP, 'hcigatt-bonds')
os.environ['HCIGATT_BOND_DIR'] = BONDS

# bluetoothd's settings for the tests (keys from Debian's main.conf, BlueZ 5.66):
# AutoEnable off keeps hci1 down for hcigatt's user channel (bluetoothd would power
# every adapter it sees); temporary (unpaired) devices stay 10 minutes, not 30 s.
MAIN_CONF = """\
[General]
ControllerMode = le
JustWorksRepairing = never
TemporaryTimeout = 600
[GATT]
Cache = always
[Policy]
AutoEnable = false
"""

world = None
btmon = None
dbus_daemon = None
bluetoothd = None
peer = None


def log_path(name):
    return os.path.join(TMP, name)


def read(path):
    with open(path, errors='replace') as f:
        return f.read()


def hcigatt(*args, timeout=120, input=None):
    p = subprocess.run([HCIGATT, *args], capture_output=True, text=True, timeout=timeout, input=input)
    sys.stderr.write(f'\n$ hcigatt {" ".join(args)} -> {p.returncode}\n{p.stderr}')
    return p.returncode, p.stdout, p.stderr


def btmgmt(*args):
    p = subprocess.run(['btmgmt', '--index', '0', *args], capture_output=True, text=True, timeout=30)
    sys.stderr.write(f'\n$ btmgmt {" ".join(args)} -> {p.returncode}\n{p.stdout}{p.stderr}')
    if p.returncode != 0:
        raise AssertionError(f'btmgmt {" ".join(args)} failed: {p.stdout}{p.stderr}')
    return p.stdout


class BluezError(Exception):
    pass


class BluezPeer:
    """bluez_peer.py: requests and their replies, and its events kept in order (a wait
    looks at the events since the test began, so one that came early is not lost)."""

    def __init__(self):
        self.log = open(log_path('bluez_peer.log'), 'w')
        self.proc = subprocess.Popen([SYSTEM_PYTHON, DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, bufsize=1)
        self.cond = threading.Condition()
        self.replies = {}
        self.events = []
        self.start = 0
        self.next_id = 0
        threading.Thread(target=self.reader, daemon=True).start()
        self.wait_event(lambda e: e['event'] == 'ready', 30, 'bluez_peer.py ready')

    def reader(self):
        for line in self.proc.stdout:
            msg = json.loads(line)
            sys.stderr.write(f'bluez: {line}')
            with self.cond:
                if 'id' in msg:
                    self.replies[msg['id']] = msg
                else:
                    self.events.append(msg)
                self.cond.notify_all()
        with self.cond:
            self.replies[None] = {'error': f'bluez_peer.py exited ({self.proc.wait()}): see bluez_peer.log'}
            self.cond.notify_all()

    def __call__(self, op, **fields):
        """One request; its `timeout` (seconds, default 120) goes to the driver, which
        answers with an error when it passes; this side waits 30 s more."""
        timeout = fields.setdefault('timeout', 120)
        with self.cond:
            self.next_id += 1
            req_id = self.next_id
            sys.stderr.write(f'bluez> {op} {fields}\n')
            self.proc.stdin.write(json.dumps({'id': req_id, 'op': op, **fields}) + '\n')
            self.proc.stdin.flush()
            deadline = time.monotonic() + timeout + 30
            while req_id not in self.replies and None not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f'bluez_peer.py did not answer {op} within {timeout + 30} s')
                self.cond.wait(left)
            msg = self.replies.pop(req_id, None) or self.replies[None]
        if 'error' in msg:
            raise BluezError(msg['error'])
        return msg

    def wait_event(self, predicate, timeout, what):
        """The first event since drain() that matches."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = [e for e in self.events[self.start:] if predicate(e)]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0 or None in self.replies:
                    raise AssertionError(f'no BlueZ event: {what} within {timeout} s')
                self.cond.wait(left)

    def drain(self):
        """Events before now are not waited for."""
        with self.cond:
            self.start = len(self.events)

    def close(self):
        try:
            self('quit', timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Serve:
    """`hcigatt serve ... --json` on hci1; its events collected as they come. stop() may
    be called more than once (tests register it as a cleanup: a serve left running
    would hold hci1 for every later test)."""

    def __init__(self, *args, name='VM-Serve'):
        self.log = open(log_path('serve.log'), 'a+')
        self.proc = subprocess.Popen([HCIGATT, 'serve', *TRANSPORT, '--name', name, '--json', *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.events = []
        self.cond = threading.Condition()
        threading.Thread(target=self.reader, daemon=True).start()
        try:
            self.wait_for(lambda e: e['event'] == 'advertising', 60, 'advertising')
        except BaseException:
            self.stop()
            raise

    def reader(self):
        for line in self.proc.stdout:
            sys.stderr.write(f'serve: {line}')
            with self.cond:
                self.events.append(json.loads(line))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = [e for e in self.events if predicate(e)]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f'serve: no {what} within {timeout} s (exit {self.proc.poll()}): '
                                         f'{self.events}\n{read(self.log.name)}')
                self.cond.wait(min(left, 1))

    def of(self, kind):
        with self.cond:
            return [e for e in self.events if e['event'] == kind]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()
        return self.proc.returncode


def start_bluez():
    """dbus-daemon (the system bus), a tmpfs for BlueZ's storage, bluetoothd; returns once
    bluetoothd owns org.bluez (there is no bus activation: the service file runs /bin/false)."""
    global dbus_daemon, bluetoothd, btmon
    # Every packet of both adapters (the monitor channel sees the user channel's too), for
    # reading a failure afterwards: `btmon -r` or tshark on the job folder's hci.btsnoop.
    btmon = subprocess.Popen(['btmon', '-w', log_path('hci.btsnoop')], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    os.makedirs('/run/dbus', exist_ok=True)
    dbus_daemon = subprocess.Popen(['dbus-daemon', '--system', '--nofork', '--nopidfile', '--nosyslog',
                                    '--print-address'], stdout=subprocess.PIPE,
                                   stderr=open(log_path('dbus-daemon.log'), 'w'), text=True)
    ready = select.select([dbus_daemon.stdout], [], [], 30)[0]
    address = dbus_daemon.stdout.readline() if ready else ''
    if not address.startswith('unix:'):
        raise RuntimeError(f'dbus-daemon did not start: {address} {read(log_path("dbus-daemon.log"))}')
    # The guest's root is the host's, read-only: bonds and GATT caches go on a tmpfs.
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'mode=0700', 'tmpfs', '/var/lib/bluetooth'], check=True)
    conf = log_path('main.conf')
    with open(conf, 'w') as f:
        f.write(MAIN_CONF)
    versions = {
        'bluetoothd': subprocess.run([BLUETOOTHD, '--version'], capture_output=True, text=True).stdout.strip(),
        'bluez package': subprocess.run(['dpkg-query', '-W', '-f=${Version}', 'bluez'],
                                        capture_output=True, text=True).stdout.strip(),
        'dbus-daemon': subprocess.run(['dbus-daemon', '--version'], capture_output=True,
                                      text=True).stdout.splitlines()[0],
        'kernel': os.uname().release + ' ' + os.uname().version,
    }
    sys.stderr.write(f'BlueZ peer versions: {json.dumps(versions)}\n')
    with open(log_path('bluetoothd.log'), 'w') as log:
        bluetoothd = subprocess.Popen([BLUETOOTHD, '-n', '-d', '-f', conf], stdout=subprocess.DEVNULL, stderr=log)
    owner = [SYSTEM_PYTHON, '-c', 'import dbus, sys; b = dbus.SystemBus(); '
             'sys.exit(0 if b.name_has_owner("org.bluez") else 1)']
    deadline = time.monotonic() + 30
    while subprocess.run(owner).returncode != 0:
        if bluetoothd.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f'bluetoothd did not take org.bluez (exit {bluetoothd.poll()}): '
                               f'{read(log_path("bluetoothd.log"))[-4000:]}')
        time.sleep(0.2)


def setUpModule():
    global world, peer
    # Runs even when the set-up fails half way: nothing is left running, the logs are shown.
    unittest.addModuleCleanup(stop_everything)
    with open(log_path('vhci_world.log'), 'w') as log:
        world = subprocess.Popen([sys.executable, WORLD, '--controllers', '2'],
                                 stdout=subprocess.PIPE, stderr=log, text=True)
    ready = select.select([world.stdout], [], [], 180)[0]
    line = world.stdout.readline() if ready else ''
    if not line:
        raise RuntimeError(f'vhci_world did not start: {read(log_path("vhci_world.log"))}')
    got = {c['index']: c['address'] for c in json.loads(line)['controllers']}
    if got != {0: BLUEZ, 1: HCIGATT_ADDRESS}:
        raise RuntimeError(f'unexpected adapters: {got}')
    start_bluez()
    peer = BluezPeer()
    adapter = peer('adapter', powered=True, pairable=True, alias='VM-BlueZ')
    if adapter['Address'] != BLUEZ or not adapter['Powered']:
        raise RuntimeError(f'hci0 in BlueZ: {adapter}')
    peer('agent', capability='KeyboardDisplay')
    # hci1 settles down after the kernel's setup (bluetoothd does not power it).
    deadline = time.monotonic() + 20
    while 'hci1     C0:FF:EE:00:00:02  down   virtual free' not in hcigatt('list')[1]:
        if time.monotonic() > deadline:
            raise RuntimeError('hci1 did not come down for the user channel')
        time.sleep(0.5)


def stop_everything():
    if peer is not None:
        peer.close()
    for proc in (bluetoothd, dbus_daemon, world, btmon):
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for name in ('bluetoothd.log', 'bluez_peer.log', 'dbus-daemon.log', 'vhci_world.log', 'serve.log'):
        if os.path.exists(log_path(name)):
            sys.stderr.write(f'\n==== {name}\n{read(log_path(name))[-20000:]}')
    if bluetoothd is not None and bluetoothd.returncode not in (0, -signal.SIGTERM):
        raise RuntimeError(f'bluetoothd exited {bluetoothd.returncode}')


class BlueZ(unittest.TestCase):
    def setUp(self):
        if bluetoothd.poll() is not None:
            self.fail(f'bluetoothd is gone (exit {bluetoothd.returncode}): see bluetoothd.log')
        peer.drain()

    def tearDown(self):
        if bluetoothd.poll() is not None:
            self.fail(f'bluetoothd exited {bluetoothd.returncode} during the test (crash?)')

    def forget(self):
        """BlueZ forgets hcigatt (its bond and cache) and hcigatt's bonds are removed."""
        peer('remove', address=HCIGATT_ADDRESS)
        subprocess.run(['rm', '-rf', BONDS], check=True)

    def serve(self, *args, **kwargs):
        """A Serve stopped when the test ends, whatever happens."""
        s = Serve(*args, **kwargs)
        self.addCleanup(s.stop)
        return s

    def end_link(self, serve):
        """Stops serve, which ends the link from hcigatt's side; BlueZ sees it go.

        Not Device1.Disconnect(): here mgmt Disconnect of the link bluetoothd made
        completes at once without an HCI Disconnect (dmesg: "hci0: Opcode 0x200e failed:
        -16": the kernel tries LE Create Connection Cancel, as if the link were still being
        made; whether the 6.1 kernel or Bumble's controller leads it there is not settled)
        and the link stays up in the controller while the kernel and bluetoothd think it
        gone."""
        self.assertEqual(serve.stop(), 0)
        deadline = time.monotonic() + 30
        while peer('device', address=HCIGATT_ADDRESS).get('Connected'):
            if time.monotonic() > deadline:
                self.fail('BlueZ still connected after serve stopped')
            time.sleep(0.2)

    def bluetoothd_log_since(self, mark):
        return read(log_path('bluetoothd.log'))[mark:]

    def bluetoothd_log_mark(self):
        return len(read(log_path('bluetoothd.log')))

    def ensure_bluez_peripheral(self):
        """BlueZ's GATT application and advertisement for the hcigatt-central tests
        (registered again: cheap, and a test needing them does not depend on test_5)."""
        peer('app', services=[{'uuid': APP_SERVICE, 'characteristics': [
            {'uuid': APP_TEXT, 'flags': ['read', 'write'], 'hex': b'hello'.hex()},
            {'uuid': APP_COUNTER, 'flags': ['notify'], 'hex': '00', 'notify_ms': 200},
            {'uuid': APP_SECRET, 'flags': ['encrypt-read'], 'hex': b'secret'.hex()}]}])
        peer('advertise', name='VM-BlueZ', uuids=[APP_SERVICE])

    def test_1_bluez_central_discovers_reads_writes_and_subscribes(self):
        self.forget()
        serve = self.serve('--profile', 'thermometer,battery,device-info')
        found = peer('find', address=HCIGATT_ADDRESS, timeout=60)
        self.assertEqual(found['Name'], 'VM-Serve')
        self.assertEqual(found['AddressType'], 'public')
        dev = peer('connect', address=HCIGATT_ADDRESS, timeout=90)
        services = {s['uuid'][4:8]: [c['uuid'][4:8] for c in s['characteristics']] for s in dev['services']}
        # bluetoothd reads and subscribes to the Battery Level itself (its battery plugin
        # takes 180F) and keeps Generic Access to itself; the rest is on D-Bus as served.
        self.assertEqual(services['1809'], ['2a1c', '2a1d', '2a1e', '2a21'])
        self.assertEqual(services['1801'], ['2a05', '2b29', '2b2a'])
        self.assertIn('2a50', services['180a'])
        serve.wait_for(lambda e: e['event'] == 'subscription' and e['uuid'] == '2A19', 30,
                       "bluetoothd's battery plugin subscribing")
        self.assertEqual(peer('read', address=HCIGATT_ADDRESS, uuid='2a29')['hex'], b'hcigatt'.hex())
        peer('write', address=HCIGATT_ADDRESS, uuid='2a21', hex='0500')
        serve.wait_for(lambda e: e['event'] == 'write' and e['uuid'] == '2A21' and e['value'] == '0500', 30,
                       'the write of 2A21')
        self.assertEqual(peer('read', address=HCIGATT_ADDRESS, uuid='2a21')['hex'], '0500')
        # A value outside the Valid Range (1...60 s): Out of Range (0xFF) reaches BlueZ,
        # and the value stays.
        with self.assertRaises(BluezError) as refused:
            peer('write', address=HCIGATT_ADDRESS, uuid='2a21', hex='5802')
        self.assertEqual(str(refused.exception), 'org.bluez.Error.Failed: Operation failed with ATT error: 0xff')
        self.assertEqual(peer('read', address=HCIGATT_ADDRESS, uuid='2a21')['hex'], '0500')
        path = peer('notify', address=HCIGATT_ADDRESS, uuid='2a1c', on=True)['path']
        values = []
        for _ in range(2):
            v = peer.wait_event(lambda e: e['event'] == 'value' and e['path'] == path and e not in values, 30,
                                'a temperature')
            values.append(v)
            self.assertEqual(v['hex'][:2], '06', v)  # flags: time stamp and type present, Celsius
            self.assertEqual(len(v['hex']), 26, v)   # flags, FLOAT, 7-byte time, type
        serve.wait_for(lambda e: e['event'] == 'confirmed' and e['uuid'] == '2A1C', 30, 'a confirmation')
        self.end_link(serve)
        # bluetoothd keeps the database with the Database Hash's value beside its handle.
        cache = read(f'/var/lib/bluetooth/{BLUEZ}/cache/{HCIGATT_ADDRESS}')
        sys.stderr.write(f'bluetoothd cache:\n{cache}\n')
        hash_line = [l for l in cache.splitlines() if l.lower().endswith('00002b2a-0000-1000-8000-00805f9b34fb')]
        self.assertEqual(len(hash_line), 1, cache)
        self.assertRegex(hash_line[0], r':[0-9a-f]{32}:00002b2a')

    def pair_and_read(self, *serve_args, profile='battery,device-info', read_uuid='2a29', agent=None,
                      during_pairing=None):
        """serve --security ...; BlueZ pairs (Device1.Pair) and reads an encrypted value.
        Returns (serve's paired event, BlueZ's device)."""
        self.forget()
        if agent:
            peer('agent', **agent)
            self.addCleanup(peer, 'agent', capability='KeyboardDisplay')
        serve = self.serve('--profile', profile, *serve_args)
        peer('find', address=HCIGATT_ADDRESS, timeout=60)
        if during_pairing:
            result = {}

            def pair():
                try:
                    result['dev'] = peer('pair', address=HCIGATT_ADDRESS, timeout=120)
                except Exception as e:
                    result['error'] = e
            pairing = threading.Thread(target=pair)
            pairing.start()
            try:
                during_pairing(serve)
            finally:
                pairing.join(160)
            self.assertFalse(pairing.is_alive(), 'Pair() did not return')
            if 'error' in result:
                raise result['error']
            dev = result['dev']
        else:
            dev = peer('pair', address=HCIGATT_ADDRESS, timeout=120)
        self.assertTrue(dev['Paired'], dev)
        self.assertTrue(dev['Bonded'], dev)
        paired = serve.wait_for(lambda e: e['event'] == 'paired', 30, 'the pairing')
        peer('connect', address=HCIGATT_ADDRESS, timeout=90)
        value = peer('read', address=HCIGATT_ADDRESS, uuid=read_uuid)['hex']
        if read_uuid == '2a29':
            self.assertEqual(value, b'hcigatt'.hex())
        self.assertEqual(serve.of('pairing-failed'), [])
        self.end_link(serve)
        return paired, dev

    def test_2a_bluez_pairs_sc_just_works(self):
        paired, _ = self.pair_and_read('--security', 'encrypted')
        self.assertEqual((paired['secure_connections'], paired['method'], paired['key_size'], paired['bonded']),
                         (True, 'Just Works', 16, True), paired)
        self.assertEqual(paired['peer'], f'{BLUEZ} (public)')

    def test_2b_bluez_pairs_sc_passkey_with_its_agent(self):
        # hcigatt shows a passkey (display-only); BlueZ's agent is asked for it
        # (RequestPasskey) and types the one serve's "passkey" event gives.
        def type_it(serve):
            peer.wait_event(lambda e: e['event'] == 'agent' and e['method'] == 'RequestPasskey', 60,
                            'the agent asked for the passkey')
            shown = serve.wait_for(lambda e: e['event'] == 'passkey', 60, 'the passkey shown')
            self.assertEqual(shown['peer'], f'{BLUEZ} (public)')
            peer('agent_passkey', passkey=int(shown['passkey']))
        paired, _ = self.pair_and_read('--security', 'authenticated', '--io-capability', 'display-only',
                                       agent={'capability': 'KeyboardDisplay', 'passkey': 'ask'},
                                       during_pairing=type_it)
        self.assertEqual((paired['secure_connections'], paired['method'], paired['authenticated']),
                         (True, 'Passkey Entry (shown here)', True), paired)

    def test_2c_bluez_pairs_legacy_with_sc_off(self):
        btmgmt('sc', 'off')
        self.addCleanup(btmgmt, 'sc', 'on')
        paired, _ = self.pair_and_read('--security', 'encrypted')
        self.assertEqual((paired['secure_connections'], paired['method'], paired['key_size']),
                         (False, 'Just Works', 16), paired)

    def test_3_bluez_reconnects_with_the_bond(self):
        self.pair_and_read('--security', 'encrypted')
        rc, out, err = hcigatt('bonds', '--json')
        self.assertEqual(rc, 0, err)
        bonds = [json.loads(l) for l in out.splitlines() if l.strip()]
        self.assertEqual([(b['identity'], b['key_size'], b['secure_connections']) for b in bonds],
                         [(f'{BLUEZ} (public)', 16, True)], out)
        # A new serve (the bond from its directory) with the same database: BlueZ
        # connects, the link is encrypted with the stored key (no pairing), the encrypted
        # value reads, and bluetoothd's cache stands (the Database Hash matched).
        mark = self.bluetoothd_log_mark()
        serve = self.serve('--profile', 'battery,device-info', '--security', 'encrypted')
        dev = peer('connect', address=HCIGATT_ADDRESS, timeout=90)
        self.assertTrue(dev['Paired'])
        self.assertEqual(peer('read', address=HCIGATT_ADDRESS, uuid='2a29')['hex'], b'hcigatt'.hex())
        serve.wait_for(lambda e: e['event'] == 'bond-restored', 30, 'the bonded client back')
        self.assertEqual(serve.of('paired'), [])
        self.assertEqual(serve.of('pairing-failed'), [])
        self.end_link(serve)
        self.assertIn('DB Hash match: skipping discovery', self.bluetoothd_log_since(mark))

    def test_4_bluez_sees_the_new_database_after_serve_restarts(self):
        # Bonded, with the thermometer's database cached; serve comes back with another
        # one and says so (Service Changed); nothing stale is read.
        self.pair_and_read('--security', 'encrypted', profile='thermometer,device-info')
        serve = self.serve('--profile', 'heartrate,device-info', '--security', 'encrypted')
        peer('connect', address=HCIGATT_ADDRESS, timeout=90)
        restored = serve.wait_for(lambda e: e['event'] == 'bond-restored', 30, 'the bonded client back')
        self.assertTrue(restored['service_changed'], restored)
        serve.wait_for(lambda e: e['event'] == 'confirmed' and e['uuid'] == '2A05', 30,
                       'Service Changed confirmed')
        deadline = time.monotonic() + 30
        while True:
            dev = peer('device', address=HCIGATT_ADDRESS)
            uuids = {s['uuid'][4:8] for s in dev['services']}
            if '180d' in uuids or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.assertIn('180d', uuids, dev)
        self.assertNotIn('1809', uuids, dev)
        self.assertEqual(peer('read', address=HCIGATT_ADDRESS, uuid='2a38')['hex'], '01')  # chest
        with self.assertRaises(BluezError):
            peer('read', address=HCIGATT_ADDRESS, uuid='2a1d')  # the thermometer's, gone
        self.end_link(serve)
        cache = read(f'/var/lib/bluetooth/{BLUEZ}/cache/{HCIGATT_ADDRESS}').lower()
        self.assertIn('0000180d-', cache)
        self.assertNotIn('00001809-', cache)

    def test_4b_unbonded_bluez_sees_the_new_database_too(self):
        # Not bonded: no Service Changed is owed, but bluetoothd kept the database of
        # the device it knows and checks the Database Hash when it connects again.
        self.forget()
        serve = self.serve('--profile', 'thermometer,device-info')
        peer('find', address=HCIGATT_ADDRESS, timeout=60)
        dev = peer('connect', address=HCIGATT_ADDRESS, timeout=90)
        self.assertIn('1809', {s['uuid'][4:8] for s in dev['services']})
        self.assertFalse(dev['Paired'])
        self.end_link(serve)
        mark = self.bluetoothd_log_mark()
        serve = self.serve('--profile', 'heartrate,device-info')
        dev = peer('connect', address=HCIGATT_ADDRESS, timeout=90)
        uuids = {s['uuid'][4:8] for s in dev['services']}
        self.assertIn('180d', uuids, dev)
        self.assertNotIn('1809', uuids, dev)
        self.assertEqual(peer('read', address=HCIGATT_ADDRESS, uuid='2a38')['hex'], '01')
        self.assertEqual(serve.of('bond-restored'), [])
        self.end_link(serve)
        log = self.bluetoothd_log_since(mark)
        self.assertIn('DB Hash found', log)
        self.assertNotIn('DB Hash match: skipping discovery', log)

    def test_5_hcigatt_central_against_a_bluez_peripheral(self):
        # bluetoothd advertises (LEAdvertisingManager1) and serves an application
        # registered over D-Bus (GattManager1); hcigatt is the central on hci1.
        self.forget()
        self.ensure_bluez_peripheral()
        found = self.scan_for_bluez()
        self.assertEqual((found['address'], found['address_type']), (BLUEZ, 'public'), found)
        # BlueZ puts its name in the scan response (the kernel's LE Set Extended Scan
        # Response Data holds "VM-BlueZ"), but Bumble's controller reports a scan response
        # with the advertising data again (bumble/controller.py, 0.0.236): the name is
        # checked in Generic Access below instead.

        rc, out, err = hcigatt('gatt', BLUEZ_DEVICE, *TRANSPORT, '--json')
        self.assertEqual(rc, 0, err)
        db = json.loads(out)
        by_uuid = {c['uuid'].upper(): c for s in db['services'] for c in s['characteristics']}
        self.assertIn('1800', [s['uuid'] for s in db['services']])
        self.assertEqual(by_uuid[APP_TEXT.upper()]['value']['hex'], b'hello'.hex())
        self.assertEqual(by_uuid['2A00']['value']['text'], 'VM-BlueZ')
        # The encrypt-read value: hcigatt paired (Just Works; bluetoothd's agent authorized)
        # and read it.
        self.assertEqual(by_uuid[APP_SECRET.upper()]['value']['hex'], b'secret'.hex(), by_uuid[APP_SECRET.upper()])
        self.assertEqual(peer('device', address=HCIGATT_ADDRESS)['Paired'], True)
        asked = peer.wait_event(lambda e: e['event'] == 'agent', 5, "BlueZ's agent asked")
        self.assertEqual(asked['method'], 'RequestAuthorization')

        rc, out, err = hcigatt('write', BLUEZ_DEVICE, APP_TEXT, '776f726c64', *TRANSPORT)
        self.assertEqual(rc, 0, err)
        wrote = peer.wait_event(lambda e: e['event'] == 'write' and e['uuid'] == APP_TEXT, 30, 'the write')
        self.assertEqual(wrote['hex'], b'world'.hex())
        rc, out, err = hcigatt('read', BLUEZ_DEVICE, APP_TEXT, *TRANSPORT, '--json')
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)['hex'], b'world'.hex())

        rc, out, err = hcigatt('subscribe', BLUEZ_DEVICE, APP_COUNTER, '--count', '3', '--json', *TRANSPORT)
        self.assertEqual(rc, 0, err)
        lines = [json.loads(l) for l in out.splitlines() if l.strip()]
        values = [v for v in lines if v['kind'] != 'link']
        self.assertEqual([v['kind'] for v in values], ['notification'] * 3, out)
        self.assertEqual(len(lines), 4, out)  # and the link's line
        counters = [int(v['hex'], 16) for v in values]
        self.assertEqual(counters, [(counters[0] + i) % 256 for i in range(3)], out)
        peer.wait_event(lambda e: e['event'] == 'notifying' and e['uuid'] == APP_COUNTER and not e['on'], 30,
                        'the unsubscription')

        # The bond hcigatt made: a new connection encrypts with it (no pairing) and reads.
        rc, out, err = hcigatt('read', BLUEZ_DEVICE, APP_SECRET, *TRANSPORT, '--json')
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)['hex'], b'secret'.hex())
        self.assertIn('with the stored bond', err)

    def scan_for_bluez(self):
        """BlueZ's advertisement (APP_SERVICE) as hcigatt scans it; a few tries, since
        advertising starts a little after the registration under emulation."""
        for attempt in range(4):
            rc, out, err = hcigatt('scan', *TRANSPORT, '--duration', '3', '--json')
            self.assertEqual(rc, 0, err)
            seen = [json.loads(l) for l in out.splitlines() if l.strip()]
            seen = [r for r in seen if APP_SERVICE.upper() in [u.upper() for u in r.get('services', [])]]
            if seen:
                self.assertEqual(len(seen), 1, out)
                return seen[0]
        self.fail(f"hcigatt's scans did not see BlueZ advertising: {out}")

    def test_5b_hcigatt_pairs_with_bluez_numeric_comparison(self):
        # Both KeyboardDisplay with Secure Connections: Numeric Comparison; BlueZ's agent
        # is shown the number (RequestConfirmation) and says yes, and so does hcigatt.
        self.ensure_bluez_peripheral()
        peer('remove', address=HCIGATT_ADDRESS)
        rc, out, err = hcigatt('pair', BLUEZ_DEVICE, *TRANSPORT, '--json', '--repair',
                               '--io-capability', 'keyboard-display', '--confirm', 'yes', '--mitm')
        self.assertEqual(rc, 0, err)
        result = json.loads(out)
        self.assertEqual((result['method'], result['secure_connections'], result['authenticated']),
                         ('Numeric Comparison', True, True), result)
        asked = peer.wait_event(lambda e: e['event'] == 'agent' and e['method'] == 'RequestConfirmation', 5,
                                "BlueZ's agent asked to confirm")
        self.assertIn(f'numeric comparison with {BLUEZ} (public): {asked["passkey"]:06d}', err)
        dev = peer('device', address=HCIGATT_ADDRESS)
        self.assertTrue(dev['Paired'] and dev['Bonded'], dev)

    def test_6_l2cap_credit_based_channels_with_l2test(self):
        # hcigatt connects to l2test listening on PSM 128 (on BlueZ's advertising adapter)
        # and sends SDUs larger than the link's MPS (23 here: 27-byte LE buffers).
        self.ensure_bluez_peripheral()
        dump = Lines(['stdbuf', '-oL', 'l2test', '-d', '-V', 'le_public', '-P', '128', '-I', '512', '-i', 'hci0'])
        self.addCleanup(dump.stop)
        dump.wait_for(lambda l: 'Waiting for connection on psm 128' in l, 30, 'l2test listening')
        sdus = [bytes((i + n) & 0xFF for n in range(size)) for i, size in enumerate((300, 24, 512))]
        rc, out, err = hcigatt('l2cap', 'connect', BLUEZ_DEVICE, '128', '--hex', *TRANSPORT,
                               input='\n'.join(s.hex() for s in sdus) + '\n')
        self.assertEqual(rc, 0, err)
        # hcigatt closed the channel after its --linger second: l2test has printed all.
        text = '\n'.join(dump.stop())
        sys.stderr.write(f'l2test -d:\n{text}\n')
        self.assertEqual(l2test_dump(text), sdus, text)

        # l2test connects to hcigatt listening on PSM 129 and sends three 300-byte SDUs
        # (-g: it waits before closing, so nothing still queued for credits is dropped).
        listen = Lines([HCIGATT, 'l2cap', 'listen', '129', '--hex', '--name', 'VM-L2', *TRANSPORT],
                       stderr='listen.log')
        self.addCleanup(listen.stop)
        log = lambda: read(log_path('listen.log'))  # noqa: E731
        deadline = time.monotonic() + 60
        while 'listening on PSM 0x0081 as "VM-L2"' not in log():
            self.assertLess(time.monotonic(), deadline, log())
            time.sleep(0.2)
        send = subprocess.run(['l2test', '-s', '-V', 'le_public', '-P', '129', '-O', '512', '-b', '300',
                               '-N', '3', '-g', '2000', '-i', 'hci0', HCIGATT_ADDRESS], capture_output=True,
                              text=True, timeout=90)
        sys.stderr.write(f'l2test -s: {send.returncode}\n{send.stdout}{send.stderr}\n')
        self.assertEqual(send.returncode, 0)
        lines = listen.wait_for(lambda l: False, 30, None, count=3)
        listen.stop()
        self.assertEqual(listen.proc.returncode, 0, log())
        self.assertIn(f'channel from {BLUEZ} (public): PSM 0x0081, their MTU 672', log())
        self.assertEqual([len(bytes.fromhex(l)) for l in lines], [300] * 3, lines)
        # l2test's frames: a 32-bit sequence number and the 16-bit size, then 0x7F.
        for seq, line in enumerate(lines):
            frame = bytes.fromhex(line)
            self.assertEqual(int.from_bytes(frame[0:4], 'little'), seq, line)
            self.assertEqual(int.from_bytes(frame[4:6], 'little'), 300, line)
            self.assertEqual(set(frame[6:]), {0x7F}, line)

    def test_7a_bluez_privacy_hcigatt_finds_the_identity_behind_rpas(self):
        # BlueZ advertises from resolvable private addresses (the kernel's, with an IRK
        # given to btmgmt); hcigatt pairs with one and gets the IRK and the identity.
        self.forget()
        self.ensure_bluez_peripheral()
        set_privacy(True)
        self.addCleanup(set_privacy, False)
        first = self.scan_for_bluez()
        self.assertEqual((first['address_type'], first['address_kind']), ('random', 'resolvable-private'), first)
        self.assertNotIn('identity', first)
        rpa = first['address']
        rc, out, err = hcigatt('pair', f'{rpa}/random', *TRANSPORT, '--json')
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual(r['address'], f'{rpa} (resolvable-private)')
        self.assertEqual(r['identity'], f'{BLUEZ} (public)')
        self.assertIn('irk', r['keys'])
        # A new private address (Set Privacy again, same IRK, marks the kernel's address
        # expired): scan names the identity behind it, and the identity address finds it.
        set_privacy(True)
        seen = self.scan_for_bluez()
        self.assertNotEqual(seen['address'], rpa, 'no new private address after Set Privacy')
        self.assertEqual((seen['address_kind'], seen.get('identity'), seen.get('identity_type')),
                         ('resolvable-private', BLUEZ, 'public'), seen)
        rc, out, err = hcigatt('read', BLUEZ, APP_SECRET, *TRANSPORT, '--json')
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)['hex'], b'secret'.hex())
        self.assertIn(f'{seen["address"]} is a private address of {BLUEZ} (public', err)
        self.assertIn('with the stored bond', err)

    def test_7b_serve_privacy_bluez_knows_hcigatt_behind_rpas(self):
        # serve --privacy: BlueZ discovers a private address, pairs, and learns hcigatt's
        # IRK and identity (Device1.Address becomes the public identity).
        self.forget()
        serve = self.serve('--profile', 'battery,device-info', '--security', 'encrypted', '--privacy', name='VM-Priv')
        rpa = serve.of('advertising')[0]['address']
        self.assertTrue(rpa.endswith('(resolvable-private)'), rpa)
        rpa = rpa.split()[0]
        found = peer('find', name='VM-Priv', timeout=60)
        self.assertEqual((found['Address'], found['AddressType']), (rpa, 'random'), found)
        dev = peer('pair', address=rpa, timeout=120)
        self.assertTrue(dev['Bonded'], dev)
        dev = peer('device', address=HCIGATT_ADDRESS)  # the identity now
        self.assertEqual(dev['AddressType'], 'public', dev)
        self.end_link(serve)
        # serve again: a new private address; BlueZ connects to the identity, the kernel
        # resolves the new address with the IRK, and the bond encrypts the link.
        serve = self.serve('--profile', 'battery,device-info', '--security', 'encrypted', '--privacy', name='VM-Priv')
        rpa2 = serve.of('advertising')[0]['address'].split()[0]
        self.assertNotEqual(rpa2, rpa)
        peer('connect', address=HCIGATT_ADDRESS, timeout=90)
        self.assertEqual(peer('read', address=HCIGATT_ADDRESS, uuid='2a29')['hex'], b'hcigatt'.hex())
        serve.wait_for(lambda e: e['event'] == 'bond-restored', 30, 'the bonded client back')
        self.assertEqual(serve.of('paired'), [])
        self.end_link(serve)

    def repair_refused_by_serve(self, *serve_args):
        """BlueZ, bonded with serve, forgets its key and pairs again: serve refuses with
        Authentication Requirements and keeps the bond; BlueZ's Pair() fails."""
        serve = self.serve('--profile', 'battery,device-info', '--security', 'encrypted', *serve_args)
        peer('find', address=HCIGATT_ADDRESS, timeout=60)
        with self.assertRaises(BluezError) as refused:
            peer('pair', address=HCIGATT_ADDRESS, timeout=120)
        self.assertIn('org.bluez.Error.AuthenticationFailed', str(refused.exception))
        failed = serve.wait_for(lambda e: e['event'] == 'pairing-failed', 30, 'the refusal')
        self.assertIn('(Pairing Failed: Authentication Requirements); the device is bonded here', failed['message'])
        self.assertEqual(serve.of('paired'), [])
        self.assertEqual(serve.stop(), 0)
        rc, out, err = hcigatt('bonds', '--json')
        self.assertEqual(rc, 0, err)
        return [json.loads(l) for l in out.splitlines() if l.strip()]

    def test_8a_hcigatt_refuses_a_just_works_repairing_over_its_bond(self):
        # An impostor with BlueZ's address could pair Just Works the same way: refused.
        self.pair_and_read('--security', 'encrypted')
        peer('remove', address=HCIGATT_ADDRESS)
        bonds = self.repair_refused_by_serve()
        self.assertEqual([(b['identity'], b['secure_connections']) for b in bonds], [(f'{BLUEZ} (public)', True)])
        # --allow-repairing lets it replace the bond (the user chose to trust the address).
        serve = self.serve('--profile', 'battery,device-info', '--security', 'encrypted', '--allow-repairing')
        peer('find', address=HCIGATT_ADDRESS, timeout=60)
        dev = peer('pair', address=HCIGATT_ADDRESS, timeout=120)
        self.assertTrue(dev['Bonded'], dev)
        paired = serve.wait_for(lambda e: e['event'] == 'paired', 30, 'the pairing')
        self.assertEqual((paired['method'], paired['secure_connections']), ('Just Works', True))
        self.end_link(serve)

    def test_8b_hcigatt_refuses_a_weaker_repairing_even_when_allowed(self):
        # A Secure Connections bond; BlueZ forgets it and, with SC off, pairs again with
        # legacy pairing: weaker than the bond, refused even with --allow-repairing.
        self.pair_and_read('--security', 'encrypted')
        peer('remove', address=HCIGATT_ADDRESS)
        btmgmt('sc', 'off')
        self.addCleanup(btmgmt, 'sc', 'on')
        bonds = self.repair_refused_by_serve('--allow-repairing')
        self.assertEqual([(b['identity'], b['secure_connections']) for b in bonds], [(f'{BLUEZ} (public)', True)])

    def test_8c_bluez_refuses_a_just_works_repairing_over_its_bond(self):
        # hcigatt bonds with BlueZ's peripheral, loses its key, and pairs again with Just
        # Works: bluetoothd refuses it (JustWorksRepairing = never: the kernel asks it to
        # confirm and it says no) and keeps its bond; hcigatt says what the device sent.
        self.forget()
        self.ensure_bluez_peripheral()
        rc, out, err = hcigatt('pair', BLUEZ_DEVICE, *TRANSPORT, '--json')
        self.assertEqual(rc, 0, err)
        self.assertTrue(peer('device', address=HCIGATT_ADDRESS)['Bonded'])
        subprocess.run(['rm', '-rf', BONDS], check=True)
        rc, out, err = hcigatt('pair', BLUEZ_DEVICE, *TRANSPORT, '--json')
        self.assertEqual(rc, 1, out)
        # The kernel answers bluetoothd's refusal of the Just Works confirmation with
        # Pairing Failed: Numeric Comparison Failed (0x0C, the SC reason for a "no").
        self.assertIn(f'pairing with {BLUEZ} (public) failed: the peer ended pairing: Numeric Comparison Failed', err)
        dev = peer('device', address=HCIGATT_ADDRESS)
        self.assertTrue(dev['Bonded'], dev)
        self.assertEqual(os.listdir(BONDS) if os.path.isdir(BONDS) else [], [])


class Lines:
    """A process whose stdout lines a thread collects (select + readline on a text pipe
    would lose lines already in Python's buffer)."""

    def __init__(self, argv, stderr=None):
        err = open(log_path(stderr), 'w') if stderr else subprocess.STDOUT
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        if stderr:
            err.close()
        self.lines = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self.reader, daemon=True)
        self.thread.start()

    def reader(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip('\n'))
                self.cond.notify_all()

    def wait_for(self, predicate, timeout, what, count=None):
        """The first line matching, or (count) the first count lines."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                if count is not None and len(self.lines) >= count:
                    return self.lines[:count]
                found = [l for l in self.lines if predicate(l)]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0:
                    if what is None and count is None:
                        return None
                    raise AssertionError(f'no {what or f"{count} lines"} within {timeout} s: {self.lines}')
                self.cond.wait(left)

    def stop(self):
        """SIGINT, then everything it printed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.thread.join(10)
        with self.cond:
            return list(self.lines)


BLUEZ_IRK = '000102030405060708090a0b0c0d0e0f'


def set_privacy(on):
    """btmgmt privacy with BlueZ's IRK (the kernel refuses it while powered), then
    test_5's advertisement again (powering off ended it)."""
    btmgmt('power', 'off')
    btmgmt('privacy', *(['on', BLUEZ_IRK] if on else ['off']))
    btmgmt('power', 'on')
    peer('advertise', name='VM-BlueZ', uuids=[APP_SERVICE])


def l2test_dump(text):
    """The SDUs `l2test -d` printed: "Received N bytes", then hexdump lines
    ("00000000: 00 01 ...  ascii")."""
    sdus = []
    for line in text.splitlines():
        if 'Received' in line and line.rstrip().endswith('bytes'):
            sdus.append(bytearray())
        elif sdus and len(line) > 10 and line[8:10] == ': ' and all(c in '0123456789abcdef' for c in line[:8]):
            sdus[-1].extend(bytes.fromhex(line[10:58]))
    return [bytes(s) for s in sdus]


if __name__ == '__main__':
    unittest.main(verbosity=2)
