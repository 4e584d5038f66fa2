"""hcigatt scan / info / command against Bumble virtual controllers and peripherals."""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from peer import HCIGATT, Peer, hcigatt, json_lines

THERMO = 'Thermo-1,service=1809,service=180F,mfr=004c:01020304,txpower=4'
HEART = 'Pulse-2,service=180D,address=C0:F1:F2:F3:F4:22,random'


def devices_by_name(records):
    out = {}
    for r in records:
        if r.get('name'):
            out[r['name']] = r
    return out


class ScanTests(unittest.TestCase):
    def scan(self, peer, *args, duration='2'):
        rc, out, err = hcigatt('scan', '--transport', peer.transport, '--duration', duration, '--json', *args)
        self.assertEqual(rc, 0, f'scan failed: {err}')
        return json_lines(out), err

    def assert_thermo(self, d):
        self.assertEqual(d['address'], 'F0:F1:F2:F3:F4:01')
        self.assertEqual(d['address_type'], 'public')
        self.assertEqual(d['services'], ['1809', '180F'])
        self.assertIn('Health Thermometer', d['service_names'])
        self.assertEqual(d['manufacturer']['company_id'], 0x004C)
        self.assertEqual(d['manufacturer']['data'], '01020304')
        self.assertEqual(d['tx_power'], 4)
        self.assertIsInstance(d['rssi'], int)
        self.assertTrue(-127 <= d['rssi'] <= 20)
        self.assertIn('0201', d['advertising_data'])

    def test_active_scan_extended_reports(self):
        with Peer('--peripheral', THERMO) as peer:
            records, _ = self.scan(peer)
            devices = devices_by_name(records)
            self.assertIn('Thermo-1', devices)
            self.assert_thermo(devices['Thermo-1'])
            self.assertEqual(devices['Thermo-1']['report'], 'extended', 'Bumble supports extended scanning')

    def test_forced_extended_scanning_commands(self):
        with Peer('--peripheral', THERMO) as peer:
            records, _ = self.scan(peer, '--extended', '--phy', '1m')
            devices = devices_by_name(records)
            self.assertIn('Thermo-1', devices)
            self.assert_thermo(devices['Thermo-1'])

    def test_legacy_reports(self):
        with Peer('--legacy-reports', '--peripheral', THERMO) as peer:
            records, _ = self.scan(peer)
            devices = devices_by_name(records)
            self.assertIn('Thermo-1', devices)
            self.assert_thermo(devices['Thermo-1'])
            self.assertEqual(devices['Thermo-1']['report'], 'legacy')

    def test_passive_scan(self):
        with Peer('--peripheral', THERMO) as peer:
            records, _ = self.scan(peer, '--passive')
            devices = devices_by_name(records)
            self.assertIn('Thermo-1', devices)
            self.assertEqual(devices['Thermo-1']['scan_response'], '')

    def test_two_peripherals_and_filters(self):
        with Peer('--peripheral', THERMO, '--peripheral', HEART) as peer:
            devices = devices_by_name(self.scan(peer)[0])
            self.assertEqual(set(devices), {'Thermo-1', 'Pulse-2'})
            self.assertEqual(devices['Pulse-2']['services'], ['180D'])
        with Peer('--peripheral', THERMO, '--peripheral', HEART) as peer:
            devices = devices_by_name(self.scan(peer, '--service', '180d')[0])
            self.assertEqual(set(devices), {'Pulse-2'})
        with Peer('--peripheral', THERMO, '--peripheral', HEART) as peer:
            devices = devices_by_name(self.scan(peer, '--name', 'thermo')[0])
            self.assertEqual(set(devices), {'Thermo-1'})
        with Peer('--peripheral', THERMO, '--peripheral', HEART) as peer:
            devices = devices_by_name(self.scan(peer, '--address', 'c0:f1:f2:f3:f4:22')[0])
            self.assertEqual(set(devices), {'Pulse-2'})
            self.assertEqual(devices['Pulse-2']['address_type'], 'random')
            self.assertEqual(devices['Pulse-2']['address_kind'], 'random-static')
        with Peer('--peripheral', THERMO) as peer:
            records, _ = self.scan(peer, '--min-rssi', '20')
            self.assertEqual(records, [], 'no virtual peer is that loud')

    def test_duplicates_filtered_by_host(self):
        # Bumble ignores the controller's duplicate filter, so repeats only vanish if we filter.
        with Peer('--peripheral', THERMO) as peer:
            records, _ = self.scan(peer, duration='3')
            self.assertEqual(sum(1 for r in records if r.get('name') == 'Thermo-1'), 1)
        with Peer('--peripheral', THERMO) as peer:
            records, _ = self.scan(peer, '--duplicates', duration='3')
            self.assertGreater(sum(1 for r in records if r.get('address') == 'F0:F1:F2:F3:F4:01'), 2)

    def test_human_output(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = hcigatt('scan', '--transport', peer.transport, '--duration', '2')
            self.assertEqual(rc, 0, err)
            line = next(l for l in out.splitlines() if 'F0:F1:F2:F3:F4:01' in l)
            self.assertIn('Thermo-1', line)
            self.assertIn('Health Thermometer', line)
            self.assertIn('Apple', line)
            self.assertIn('1 device', out + err)

    def test_snoop_file_opens_in_tshark(self):
        tshark = shutil.which('tshark')
        self.assertIsNotNone(tshark, 'tshark is required (apt-get install tshark)')
        with Peer('--peripheral', THERMO) as peer, tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'scan.btsnoop')
            rc, out, err = hcigatt('scan', '--transport', peer.transport, '--duration', '2',
                                   '--json', '--duplicates', '--snoop', path)
            self.assertEqual(rc, 0, err)
            t = subprocess.run([tshark, '-r', path, '-T', 'fields', '-e', 'frame.number',
                                '-e', 'hci_h4.direction', '-e', 'bthci_evt.code'],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(t.returncode, 0, t.stderr)
            rows = [r.split('\t') for r in t.stdout.splitlines()]
            # Every packet hcigatt saw or sent is in the file, both directions.
            rc2, replay, err2 = hcigatt('replay', path, '--stats', '--json')
            self.assertEqual(rc2, 0, err2)
            stats = json_lines(replay)[-1]
            self.assertEqual(len(rows), stats['packets'])
            self.assertGreater(stats['packets'], 10)
            directions = {r[1] for r in rows if len(r) > 1}
            self.assertEqual(directions, {'0x00', '0x01'})
            self.assertTrue(any(len(r) > 2 and r[2] == '0x3e' for r in rows), 'LE Meta events present')

    def test_replay_gives_the_live_output(self):
        with Peer('--peripheral', THERMO) as peer, tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'scan.btsnoop')
            rc, live, err = hcigatt('scan', '--transport', peer.transport, '--duration', '2',
                                    '--json', '--snoop', path)
            self.assertEqual(rc, 0, err)
            rc, replayed, err = hcigatt('replay', path, '--json')
            self.assertEqual(rc, 0, err)
            strip = lambda rs: [{k: v for k, v in r.items() if k not in ('time', 'rssi')} for r in rs]
            self.assertEqual(strip(json_lines(replayed)), strip(json_lines(live)))


class ControllerTests(unittest.TestCase):
    def test_info(self):
        with Peer() as peer:
            rc, out, err = hcigatt('info', '--transport', peer.transport)
            self.assertEqual(rc, 0, err)
            self.assertIn('C0:FF:EE:00:00:01', out)
            self.assertIn('LE Extended Advertising', out)
            self.assertIn('ACL', out)

    def test_command_that_is_never_answered_times_out(self):
        # Bumble never answers HCI_LE_Set_PHY: the command must fail with a timeout, not hang.
        with Peer() as peer:
            start = time.monotonic()
            rc, out, err = hcigatt('cmd', '--transport', peer.transport, '--timeout', '1',
                                   '0x2032', '00 00 01 01 00 00', timeout=30)
            self.assertEqual(rc, 1)
            self.assertIn('did not answer', err)
            self.assertIn('HCI_LE_Set_PHY', err)
            self.assertLess(time.monotonic() - start, 15)

    def test_peer_closing_mid_scan_ends_with_error(self):
        with Peer('--close-after', '1.5', '--peripheral', THERMO) as peer:
            start = time.monotonic()
            rc, out, err = hcigatt('scan', '--transport', peer.transport, '--duration', '30', timeout=60)
            self.assertEqual(rc, 1)
            self.assertIn('closed', err)
            self.assertLess(time.monotonic() - start, 10)

    def test_ctrl_c_stops_the_scan_cleanly(self):
        with Peer('--peripheral', THERMO) as peer, tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'scan.btsnoop')
            proc = subprocess.Popen([HCIGATT, 'scan', '--transport', peer.transport, '--snoop', path],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(2.5)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=10)
            self.assertEqual(proc.returncode, 0, err)
            self.assertIn('Thermo-1', out)
            self.assertIn('scan: 1 device', err)
            # Scanning was disabled before the transport closed: the last command sent.
            rc, packets, err2 = hcigatt('replay', path, '--packets', '--json')
            self.assertEqual(rc, 0, err2)
            sent = [p for p in json_lines(packets) if p['direction'] == 'sent']
            # (Bumble's supported-commands bits omit the extended scan commands, so the
            # host picks legacy scanning unless told --extended.)
            self.assertIn(sent[-1]['name'], ('HCI_LE_Set_Scan_Enable', 'HCI_LE_Set_Extended_Scan_Enable'))
            self.assertIs(sent[-1]['le_scan_enable' if 'le_scan_enable' in sent[-1] else 'enable'], False)

    def test_nothing_listening(self):
        rc, out, err = hcigatt('scan', '--transport', 'tcp:127.0.0.1:1', '--duration', '1')
        self.assertEqual(rc, 1)
        self.assertIn('127.0.0.1:1', err)

    def test_usage_errors(self):
        for args in (['scan', '--duration', 'abc'], ['scan', '--min-rssi', 'loud'],
                     ['scan', '--service', 'xyz'], ['scan', '--transport', 'carrier-pigeon:1'],
                     ['scan', '--phy', '3m'], ['scan', '--address', '12:34']):
            rc, out, err = hcigatt(*args)
            self.assertEqual(rc, 2, f'{args}: {err}')
            self.assertTrue(err.strip(), args)


if __name__ == '__main__':
    unittest.main()
