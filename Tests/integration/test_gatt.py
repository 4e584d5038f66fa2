"""hcigatt gatt / read / write / subscribe against a Bumble GATT peripheral on a virtual link."""
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

from peer import HCIGATT, Peer, hcigatt, json_lines, link_lines, measurement_lines

THERMO = 'Thermo-1,service=1809,gatt=health'
ADDR = 'F0:F1:F2:F3:F4:01/public'
LONG = '68636967-6174-7400-8000-00805F9B0001'
ECHO = '68636967-6174-7400-8000-00805F9B0002'
SECRET = '68636967-6174-7400-8000-00805F9B0003'


PROPERTY_BITS = {'broadcast': 0x01, 'read': 0x02, 'write-without-response': 0x04, 'write': 0x08,
                 'notify': 0x10, 'indicate': 0x20, 'authenticated-signed-writes': 0x40,
                 'extended-properties': 0x80}


def property_bits(names):
    return sum(PROPERTY_BITS[n] for n in names)


def run(peer, *args, timeout=60):
    return hcigatt(*args, '--transport', peer.transport, timeout=timeout)


class DiscoveryTests(unittest.TestCase):
    def test_full_discovery_matches_bumble_database_handle_by_handle(self):
        with tempfile.TemporaryDirectory() as tmp:
            dump = os.path.join(tmp, 'db.json')
            with Peer('--peripheral', THERMO, '--dump-own-db', dump) as peer:
                rc, out, err = run(peer, 'gatt', ADDR, '--json')
                self.assertEqual(rc, 0, err)
                ours = json.loads(out)
            theirs = json.load(open(dump))['peripherals'][0]['services']
        self.assertEqual(ours['mtu'], 517)
        # The peer's LE features were read (LE Read Remote Features) once the link was up.
        self.assertIn('LE Encryption', ours['link']['remote_le_features'])
        # Largest payloads: a handful of round trips, not one per attribute.
        self.assertLessEqual(ours['discovery_round_trips'], 12)
        self.assertEqual(len(ours['services']), len(theirs))
        for mine, bumble in zip(ours['services'], theirs):
            self.assertEqual((mine['start_handle'], mine['end_handle'], mine['uuid'].upper()),
                             (bumble['handle'], bumble['end_handle'], bumble['uuid'].upper()))
            self.assertEqual(len(mine['characteristics']), len(bumble['characteristics']), mine['uuid'])
            for c, b in zip(mine['characteristics'], bumble['characteristics']):
                self.assertEqual((c['declaration_handle'], c['value_handle'], c['uuid'].upper()),
                                 (b['handle'], b['value_handle'], b['uuid'].upper()))
                self.assertEqual(property_bits(c['properties']), b['properties'], c['uuid'])
                self.assertEqual([(d['handle'], d['uuid'].upper()) for d in c['descriptors']],
                                 [(d['handle'], d['uuid'].upper()) for d in b['descriptors']])
        by_uuid = {c['uuid']: c for s in ours['services'] for c in s['characteristics']}
        self.assertEqual(by_uuid['2A29']['value']['text'], 'hcigatt-test')
        # The secret needs encryption: the dump paired (Just Works) and read it.
        self.assertEqual(by_uuid[SECRET]['value']['text'], 'secret')

    def test_find_by_name_and_human_output(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'gatt', 'Thermo-1')
            self.assertEqual(rc, 0, err)
            self.assertIn('Service 1809 Health Thermometer', out)
            self.assertIn('2A21 Measurement Interval', out)
            self.assertIn('Descriptor 2906 Valid Range', out)
            self.assertIn('round trips', err)


class ReadWriteTests(unittest.TestCase):
    def test_long_read(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'read', ADDR, LONG, '--json')
            self.assertEqual(rc, 0, err)
            self.assertEqual(bytes.fromhex(json.loads(out)['hex']), bytes(i % 256 for i in range(600)))

    def test_long_write_then_read_back(self):
        value = bytes((7 * i) % 256 for i in range(300))
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'write', ADDR, ECHO, value.hex())
            self.assertEqual(rc, 0, err)
            self.assertIsNotNone(peer.events.wait_event('written', 5, uuid=ECHO, value=value.hex()))
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'write', ADDR, ECHO, '--long', '--text', 'reliable')
            self.assertEqual(rc, 0, err)
            self.assertIsNotNone(peer.events.wait_event('written', 5, uuid=ECHO, value=b'reliable'.hex()))

    def test_write_without_response(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'write', ADDR, ECHO, '--no-response', 'c0ffee')
            self.assertEqual(rc, 0, err)
            self.assertIsNotNone(peer.events.wait_event('written', 5, uuid=ECHO, value='c0ffee'))

    def test_commands_a_characteristic_does_not_take_are_refused_naming_its_properties(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'write', ADDR, '2a21', '--no-response', '0200')
            self.assertEqual(rc, 1)
            self.assertIn('does not take Write Without Response (its properties: read, write, indicate)', err)
            rc, out, err = run(peer, 'subscribe', ADDR, '2a29', '--count', '1')
            self.assertEqual(rc, 1)
            self.assertIn('can neither notify nor indicate (its properties: read)', err)
            rc, out, err = run(peer, 'heartrate', '--scan-timeout', '0.5')
            self.assertEqual(rc, 1)
            self.assertIn('no device with service 180D', err)

    def test_a_name_two_devices_share_is_reported_with_both(self):
        with Peer('--peripheral', THERMO, '--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'read', 'Thermo-1', '2a19')
            self.assertEqual(rc, 0, err)
            self.assertIn('2 devices are named "Thermo-1"', err)
            self.assertIn('F0:F1:F2:F3:F4:01', err)
            self.assertIn('F0:F1:F2:F3:F4:02', err)
            self.assertIn('give the address to choose another', err)
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'read', 'Thermo-1', '2a19')
            self.assertEqual(rc, 0, err)
            self.assertNotIn('devices are named', err)

    def test_write_out_of_range_names_the_error(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'write', ADDR, '2a21', '3c00')   # 60 s: allowed
            self.assertEqual(rc, 0, err)
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'write', ADDR, '2a21', 'ff00')   # 255 s: outside 1...60
            self.assertEqual(rc, 1)
            self.assertIn('Out of Range (0xFF)', err)

    def test_an_encrypted_characteristic_is_read_after_pairing(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'read', ADDR, SECRET)
            self.assertEqual(rc, 0, err)
            self.assertIn('"secret"', out)
            self.assertIn('raising security to encrypted', err)
            self.assertIn('security is encrypted, 16-byte key, LE Secure Connections', err)
            self.assertIsNotNone(peer.events.wait_event('paired', 5), 'the peripheral saw the pairing')

    def test_a_device_that_refuses_pairing_leaves_the_read_refused(self):
        with Peer('--peripheral', THERMO + ',pairing=refuse') as peer:
            rc, out, err = run(peer, 'read', ADDR, SECRET)
            self.assertEqual(rc, 1)
            self.assertIn('Pairing Not Supported', err)
            self.assertIn('Insufficient Encryption', err)
            self.assertIn('pair first', err)

    def test_usage_errors(self):
        for args in (['read', ADDR], ['read', ADDR, 'zz'], ['write', ADDR, '2a21'],
                     ['write', ADDR, '2a21', '0g'], ['subscribe', ADDR],
                     ['subscribe', ADDR, '2a37', '--count', '0'], ['gatt', ADDR + 'x'],
                     ['read', 'F0:F1:F2:F3:F4:01/sideways', '2a29']):
            rc, out, err = hcigatt(*args, '--transport', 'tcp:127.0.0.1:1')
            self.assertEqual(rc, 2, f'{args}: {err}')


class SubscriptionTests(unittest.TestCase):
    def test_notify_and_indicate_and_clean_unsubscribe(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'subscribe', ADDR, '2a1c', '2a37', '--count', '8', '--json')
            self.assertEqual(rc, 0, err)
            values = measurement_lines(out)
            self.assertEqual(len(values), 8)
            # One line says how the link carries them (the longest data length, LE 2M).
            links = link_lines(out)
            self.assertEqual(len(links), 1, out)
            self.assertEqual((links[0]['link']['tx_phy'], links[0]['link']['max_rx_octets']), ('LE 2M', 251), links)
            kinds = {(v['uuid'], v['kind']) for v in values}
            self.assertIn(('2A1C', 'indication'), kinds)
            self.assertIn(('2A37', 'notification'), kinds)
            temp = next(v for v in values if v['uuid'] == '2A1C')
            self.assertTrue(temp['hex'].startswith('066c0100ff'))  # flags 06, FLOAT 36.4
            # Indications were confirmed, and both CCCDs were cleared before disconnecting.
            self.assertIsNotNone(peer.events.wait_event('indication-confirmed', 5, uuid='2A1C'))
            cleared = set()
            deadline = time.monotonic() + 5
            while len(cleared) < 2 and time.monotonic() < deadline:
                e = peer.events.wait_event('written', 1, uuid='2902', value='0000')
                if e:
                    cleared.add(e['handle'])
            self.assertEqual(len(cleared), 2)

    def wait_cleared(self, peer, count):
        cleared = set()
        deadline = time.monotonic() + 5
        while len(cleared) < count and time.monotonic() < deadline:
            e = peer.events.wait_event('written', 1, uuid='2902', value='0000')
            if e:
                cleared.add(e['handle'])
        return cleared

    def test_ctrl_c_and_a_closed_stdout_stop_subscribe_cleanly(self):
        # SIGINT, or the reader of stdout going away: unsubscribe, disconnect, summary, exit 0.
        for how in ('sigint', 'closed-stdout'):
            with self.subTest(how), Peer('--peripheral', THERMO) as peer:
                env = dict(os.environ, HCIGATT_BOND_DIR=tempfile.mkdtemp())
                proc = subprocess.Popen([HCIGATT, 'subscribe', ADDR, '2a37', '--transport', peer.transport],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                lines = [proc.stdout.readline() for _ in range(2)]
                self.assertTrue(all(lines), lines)
                if how == 'sigint':
                    proc.send_signal(signal.SIGINT)
                else:
                    proc.stdout.close()
                try:
                    rc = proc.wait(timeout=20)
                finally:
                    if proc.poll() is None:
                        proc.kill()
                err = proc.stderr.read()
                self.assertEqual(rc, 0, err)
                self.assertIn('values received', err)
                self.assertNotIn('ended', err)
                self.assertEqual(len(self.wait_cleared(peer, 1)), 1, 'the CCCD was cleared before disconnecting')
                if how == 'sigint':
                    proc.stdout.close()
                proc.stderr.close()

    def test_peer_connection_parameter_request_is_answered(self):
        with Peer('--peripheral', THERMO, '--request-conn-params', '24,40,0,200') as peer:
            rc, out, err = run(peer, 'subscribe', ADDR, '2a37', '--count', '10')
            self.assertEqual(rc, 0, err)
            result = peer.events.wait_event('conn-params-result', 10)
            self.assertIsNotNone(result)
            self.assertTrue(result.get('accepted'), result)
            # The controller applied the new parameters (LE Connection Update from our host).
            # The peer reports the L2CAP response and the LL update independently, in either
            # order: wait for the update if it was not read before the result.
            updated = [e for e in peer.events.events if e['event'] == 'conn-params-updated']
            if not updated:
                e = peer.events.wait_event('conn-params-updated', 10)
                updated = [e] if e else []
            self.assertEqual([(e['interval_ms'], e['supervision_timeout_ms']) for e in updated], [(50.0, 2000.0)])

    def test_connection_update_on_request(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'read', ADDR, '2a19', '--conn-interval', '50', '--conn-latency', '2',
                               '--supervision-timeout', '4000')
            self.assertEqual(rc, 0, err)
            self.assertIn('connection parameters: interval 50 ms, latency 2, supervision timeout 4000 ms', err)
            e = peer.events.wait_event('conn-params-updated', 10)
            self.assertIsNotNone(e, peer.events.events)
            self.assertEqual((e['interval_ms'], e['latency'], e['supervision_timeout_ms']), (50.0, 2, 4000.0))
            # Only the interval: latency kept, and the link's 4 s timeout, too short for a 2 s
            # interval, becomes twice the least allowed.
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'read', ADDR, '2a19', '--conn-interval', '2000')
            self.assertEqual(rc, 0, err)
            e = peer.events.wait_event('conn-params-updated', 10)
            self.assertIsNotNone(e, peer.events.events)
            self.assertEqual((e['interval_ms'], e['latency'], e['supervision_timeout_ms']), (2000.0, 0, 8020.0))

    def test_connection_parameter_typos_are_usage_errors(self):
        for args, message in [(['--conn-interval', '5'], '--conn-interval takes milliseconds 7.5-4000'),
                              (['--conn-interval', '100-50'], 'MIN ≤ MAX'),
                              (['--conn-latency', '500'], '--conn-latency takes 0-499'),
                              (['--supervision-timeout', '50'], '--supervision-timeout takes milliseconds 100-32000')]:
            rc, out, err = hcigatt('read', ADDR, '2a19', '--transport', 'tcp:127.0.0.1:1', *args)
            self.assertEqual(rc, 2, err)
            self.assertIn(message, err)


class FailureTests(unittest.TestCase):
    def test_connect_timeout_with_an_absent_peer(self):
        with Peer('--peripheral', THERMO) as peer:
            start = time.monotonic()
            rc, out, err = run(peer, 'gatt', 'AA:BB:CC:DD:EE:FF/public', '--connect-timeout', '1')
            self.assertEqual(rc, 1)
            self.assertIn('cannot connect to AA:BB:CC:DD:EE:FF', err)
            self.assertLess(time.monotonic() - start, 10)

    def test_peer_disconnecting_mid_discovery_fails_promptly(self):
        # The peer drops the link when the fourth request of the discovery comes (not after
        # a time: on a fast link the whole discovery would be over first).
        with Peer('--peripheral', THERMO, '--disconnect-at-att', '4') as peer:
            start = time.monotonic()
            rc, out, err = run(peer, 'gatt', ADDR)
            self.assertEqual(rc, 1)
            self.assertIn('disconnected by the peer', err)
            self.assertIsNotNone(peer.events.wait_event('disconnecting', 2))
            self.assertLess(time.monotonic() - start, 10)

    def test_malformed_response_fails_that_request_and_the_link_stays_usable(self):
        # Request 12 is a value read in the dump phase (after MTU + 10 discovery requests).
        with Peer('--peripheral', THERMO, '--malform-att', '12') as peer:
            rc, out, err = run(peer, 'gatt', ADDR, '--json')
            self.assertEqual(rc, 0, err)
            self.assertIsNotNone(peer.events.wait_event('att-malformed', 5))
            chars = [c for s in json.loads(out)['services'] for c in s['characteristics']]
            errors = [c['read_error'] for c in chars if 'read_error' in c and 'Encryption' not in c['read_error']]
            self.assertEqual(len(errors), 1, errors)
            self.assertIn('malformed', errors[0].lower())
            # Every later read still worked.
            self.assertEqual(next(c for c in chars if c['uuid'] == '2A29')['value']['text'], 'hcigatt-test')

    def test_request_never_answered_times_out(self):
        with Peer('--peripheral', THERMO, '--ignore-att-after', '2') as peer:
            start = time.monotonic()
            rc, out, err = run(peer, 'gatt', ADDR, '--att-timeout', '1')
            self.assertEqual(rc, 1)
            self.assertIn('timeout', err.lower())
            self.assertLess(time.monotonic() - start, 15)


if __name__ == '__main__':
    unittest.main()
