"""The health-device scenarios against a Bumble peripheral that sends encoded values."""
import time
import unittest

from peer import Peer, hcigatt, json_lines, link_lines, measurement_lines

THERMO = 'Thermo-1,service=1809,gatt=health'
ADDR = 'F0:F1:F2:F3:F4:01/public'


def run(peer, *args, timeout=60):
    return hcigatt(*args, '--transport', peer.transport, timeout=timeout)


class ScenarioTests(unittest.TestCase):
    def test_thermometer_finds_the_device_by_service_and_decodes(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'thermometer', '--count', '3', '--json', '--interval', '5')
            self.assertEqual(rc, 0, err)
            self.assertIn('Device Name: Thermo-1', err)
            self.assertIn('hcigatt-test', err)
            self.assertIn('Measurement Interval set to 5 s', err)
            # The interval really reached the device (0x0005).
            self.assertIsNotNone(peer.events.wait_event('written', 5, uuid='2A21', value='0500'))
            values = measurement_lines(out)
            self.assertEqual(len(values), 3)
            # 2A1E (notify) exists, so the scenario takes intermediate temperatures: 36.2 °C.
            self.assertEqual({v['uuid'] for v in values}, {'2A1E'})
            self.assertAlmostEqual(values[0]['temperature'], 36.2)
            self.assertIn('°C', str(values[0]))

    def test_thermometer_out_of_range_interval_names_the_device_error(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'thermometer', ADDR, '--interval', '300', '--count', '1')
            self.assertEqual(rc, 1)
            self.assertIn('Out of Range', err)

    def test_blood_pressure(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'bloodpressure', ADDR, '--count', '2')
            self.assertEqual(rc, 0, err)
            lines = [l for l in out.splitlines() if 'Blood Pressure Measurement' in l]
            self.assertEqual(len(lines), 2)
            self.assertIn('120', lines[0])
            self.assertIn('80', lines[0])
            self.assertIn('mmHg', lines[0])
            self.assertIn('72', lines[0])
            self.assertIsNotNone(peer.events.wait_event('indication-confirmed', 5, uuid='2A35'))

    def test_heart_rate_found_by_service_with_a_random_address(self):
        with Peer('--peripheral', 'Pulse-2,service=180D,gatt=health,address=C0:F1:F2:F3:F4:22,random') as peer:
            rc, out, err = run(peer, 'heartrate', '--count', '2', '--json')
            self.assertEqual(rc, 0, err)
            v = measurement_lines(out)[0]
            self.assertEqual(v['uuid'], '2A37')
            self.assertIn('72', out)
            self.assertIn('C0:F1:F2:F3:F4:22 (random-static)', err)

    def test_sensortag_keys(self):
        with Peer('--peripheral', 'SensorTag,service=FFE0,gatt=health') as peer:
            rc, out, err = run(peer, 'keys', '--count', '4')
            self.assertEqual(rc, 0, err)
            self.assertEqual(len(out.splitlines()), 4)

    def test_monitor_subscribes_to_every_measurement(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'monitor', ADDR, '--count', '12', '--json')
            self.assertEqual(rc, 0, err)
            uuids = {v['uuid'] for v in measurement_lines(out)}
            self.assertGreaterEqual(len(uuids), 4, uuids)

    def test_monitor_two_devices_at_once(self):
        # Two links over one controller, both subscribed at the same time; one is found by name.
        # Values every 0.5 s: the device given by address (connected at once) must still be
        # taking its 25 when the one found by a scan comes up, however fast the link runs.
        with Peer('--peripheral', THERMO, '--peripheral', 'Pulse-2,service=180D,gatt=health',
                  '--notify-interval', '0.5') as peer:
            rc, out, err = run(peer, 'monitor', ADDR, 'Pulse-2', '--count', '25', '--json')
            self.assertEqual(rc, 0, err)
            values = measurement_lines(out)
            self.assertEqual(len(values), 50)  # --count is per device
            # Each link said once how it carries the values.
            self.assertEqual(sorted(l['device'] for l in link_lines(out)), ['F0:F1:F2:F3:F4:01', 'F0:F1:F2:F3:F4:02'])
            by_device = {}
            for v in values:
                by_device.setdefault(v['device'], set()).add(v['uuid'])
            self.assertEqual(set(by_device), {'F0:F1:F2:F3:F4:01', 'F0:F1:F2:F3:F4:02'}, err)
            for device, uuids in by_device.items():
                self.assertGreaterEqual(len(uuids), 2, (device, uuids))
            peer.events.wait_for(lambda e: False, 1)  # read what the peer printed so far
            events = peer.events.events
            connected = [e['peripheral'] for e in events if e['event'] == 'connected']
            self.assertEqual(sorted(connected), ['Pulse-2', 'Thermo-1'])
            # Both links were up together: each peripheral was connected before either link
            # went down (a device that reaches its count first disconnects first).
            first_down = next((i for i, e in enumerate(events) if e['event'] == 'disconnected'), len(events))
            up_together = {e['peripheral'] for e in events[:first_down] if e['event'] == 'connected'}
            self.assertEqual(up_together, {'Pulse-2', 'Thermo-1'}, events)
            # Text mode names the device on every line.
        with Peer('--peripheral', THERMO, '--peripheral', 'Pulse-2,service=180D,gatt=health') as peer:
            rc, out, err = run(peer, 'heartrate', ADDR, 'F0:F1:F2:F3:F4:02', '--count', '3')
            self.assertEqual(rc, 0, err)
            lines = out.splitlines()
            self.assertEqual(len(lines), 6)
            self.assertTrue(all('bpm' in line for line in lines), lines)
            devices = [line.split()[2] for line in lines]
            self.assertEqual(sorted(devices), ['F0:F1:F2:F3:F4:01'] * 3 + ['F0:F1:F2:F3:F4:02'] * 3)

    def test_monitor_finds_several_names_on_one_scan(self):
        # Both names on one scan; one that is not there is named, and nothing connects.
        with Peer('--peripheral', THERMO, '--peripheral', 'Pulse-2,service=180D,gatt=health') as peer:
            rc, out, err = run(peer, 'monitor', 'Pulse-2', 'Thermo-1', 'Cuff-3', '--count', '1', '--scan-timeout', '2')
            self.assertEqual(rc, 1, err)
            self.assertIn('no "Cuff-3" found in 2 s of scanning (--scan-timeout)', err)
            self.assertNotIn('no "Pulse-2"', err)
            self.assertNotIn('connecting', err)
        with Peer('--peripheral', THERMO, '--peripheral', 'Pulse-2,service=180D,gatt=health') as peer:
            rc, out, err = run(peer, 'monitor', 'Pulse-2', 'thermo-1', '--count', '2', '--json')
            self.assertEqual(rc, 0, err)
            self.assertEqual({v['device'] for v in measurement_lines(out)}, {'F0:F1:F2:F3:F4:01', 'F0:F1:F2:F3:F4:02'}, err)

    def test_one_device_failing_does_not_stop_the_others(self):
        with Peer('--peripheral', THERMO) as peer:
            rc, out, err = run(peer, 'heartrate', 'AA:BB:CC:DD:EE:FF/public', ADDR, '--count', '4',
                               '--connect-timeout', '1')
            # The device that is there gave its values; the absent one (tried first, and
            # cancelled after 1 s) is reported and makes the exit status 1.
            self.assertEqual(rc, 1, err)
            self.assertEqual(len(out.splitlines()), 4)
            self.assertIn('AA:BB:CC:DD:EE:FF: cannot connect to AA:BB:CC:DD:EE:FF (public): no connection', err)
            self.assertNotIn('did not confirm', err)  # the controller ended the create (0x02)
            self.assertIn('4 measurements printed', err)

    def test_reconnect_after_the_peer_drops_the_link(self):
        with Peer('--peripheral', THERMO, '--disconnect-after-connect', '1.5') as peer:
            start = time.monotonic()
            rc, out, err = run(peer, 'heartrate', ADDR, '--reconnect', '--count', '12', timeout=90)
            self.assertEqual(rc, 0, err)
            self.assertIn('reconnecting', err)
            self.assertEqual(len(out.splitlines()), 12)
            peer.events.wait_for(lambda e: False, 1)  # read what the peer printed so far
            connects = [e for e in peer.events.events if e['event'] == 'connected']
            self.assertGreaterEqual(len(connects), 2)
            self.assertLess(time.monotonic() - start, 60)


if __name__ == '__main__':
    unittest.main()
