"""The reference programs in Examples/ (a package of their own, on the BluetoothLE library
through a path dependency) run against Bumble peripherals and against hcigatt itself.
scripts/test builds them first (swift build --package-path Examples); missing binaries fail."""
import os
import subprocess
import tempfile
import unittest

from peer import ROOT, Peer, hcigatt
from test_l2cap import Proc

EXAMPLES = os.environ.get('HCIGATT_EXAMPLES', os.path.join(ROOT, 'Examples', '.build', 'debug'))


def example(name, *args, stdin=None, timeout=90):
    path = os.path.join(EXAMPLES, name)
    if not os.path.exists(path):
        raise AssertionError(f'{path} is missing: build the examples (swift build --package-path Examples)')
    p = subprocess.run([path, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, HCIGATT_TRANSPORT=''))
    return p.returncode, p.stdout, p.stderr


class ExampleProc(Proc):
    def __init__(self, name, *args):
        path = os.path.join(EXAMPLES, name)
        if not os.path.exists(path):
            raise AssertionError(f'{path} is missing: build the examples (swift build --package-path Examples)')
        super().__init__(*args, program=path)


class AgainstBumbleTests(unittest.TestCase):
    def test_health_thermometer_client_remembers_and_reconnects(self):
        state = os.path.join(tempfile.mkdtemp(), 'last')
        with Peer('--peripheral', 'Thermo-X,service=1809,gatt=health') as peer:
            rc, out, err = example('HealthThermometerClient', '--transport', peer.transport, '--count', '3', '--state', state)
            self.assertEqual(rc, 0, err)
            lines = out.splitlines()
            self.assertIn('found Thermo-X at F0:F1:F2:F3:F4:01 (public)', lines)
            self.assertIn('manufacturer: hcigatt-test', lines)
            self.assertIn('device name: Thermo-X', lines)
            self.assertEqual(len([l for l in lines if l.startswith('temperature: 36.4 °C, body')]), 3, out)
            self.assertTrue(any(l == 'intermediate: 36.2 °C' for l in lines), out)
            w = peer.events.wait_event('written', 5, uuid='2A21')
            self.assertEqual(w['value'], '0200', 'the interval set to 2 s')
        # The next run connects to the remembered device without scanning; the link drops
        # after 2 s and the client connects again.
        with Peer('--peripheral', 'Thermo-X,service=1809,gatt=health,disconnect_after=2') as peer:
            rc, out, err = example('HealthThermometerClient', '--transport', peer.transport, '--count', '14', '--state', state)
            self.assertEqual(rc, 0, err)
            self.assertTrue(out.startswith('reconnecting to F0:F1:F2:F3:F4:01 (public)\n'), out)
            self.assertNotIn('found', out)
            self.assertIn('connecting again', out)

    def test_sensortag_keys(self):
        with Peer('--peripheral', 'SensorTag,service=FFE0,gatt=health') as peer:
            rc, out, err = example('SensorTagKeys', '--transport', peer.transport, '--count', '8')
            self.assertEqual(rc, 0, err)
            keys = [l for l in out.splitlines() if l.startswith('keys: ')]
            self.assertEqual(len(keys), 8, out)
            # The peer cycles 0, 1, 2, 3: released, right, left, both.
            start = keys.index('keys: released')
            self.assertEqual(keys[start:start + 4], ['keys: released', 'keys: right', 'keys: left', 'keys: both'])


class AgainstHcigattTests(unittest.TestCase):
    def world(self):
        world = Peer('--hosts', '2')
        a, b = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
        return world, a, b

    def test_blood_pressure_monitor_pairs_when_the_device_demands_it(self):
        world, a, b = self.world()
        with world:
            server = Proc('serve', '--profile', 'bloodpressure', '--name', 'Cuff', '--security', 'encrypted', '--transport', a)
            try:
                self.assertIsNotNone(server.wait_for(server.lines, lambda l: l.startswith('advertising')), server.stderr)
                rc, out, err = example('BloodPressureMonitor', '--transport', b, '--count', '1', timeout=60)
                self.assertEqual(rc, 0, err)
                lines = out.splitlines()
                self.assertIn('features: body movement detection', lines, 'serve has 2A49 = 0x0001')
                self.assertTrue(any(l.startswith('blood pressure: ') and 'mmHg' in l for l in lines), out)
                self.assertTrue(any(l.startswith('link security: encrypted') for l in lines), out)
                self.assertIsNotNone(server.wait_for(server.lines, lambda l: l.startswith('paired with')), server.stderr)
            finally:
                server.stop()

    def test_a_bonded_monitor_takes_its_database_from_the_bond(self):
        # The facade's discovery is the CLI's: a bonded peripheral's database is kept with
        # the bond and reused when the Database Hash is unchanged.
        world, a, b = self.world()
        bonds = tempfile.mkdtemp()
        with world:
            server = Proc('serve', '--profile', 'bloodpressure', '--name', 'Cuff', '--security', 'encrypted', '--transport', a)
            try:
                self.assertIsNotNone(server.wait_for(server.lines, lambda l: l.startswith('advertising')), server.stderr)
                outs = []
                for _ in range(3):
                    rc, out, err = example('BloodPressureMonitor', '--transport', b, '--count', '1', '--bond-dir', bonds, timeout=60)
                    self.assertEqual(rc, 0, err)
                    self.assertTrue(any(l.startswith('link security: encrypted') for l in out.splitlines()), out)
                    outs.append([l for l in out.splitlines() if l.startswith('database: ')])
                # Not bonded when it connected: discovered as asked for, nothing kept.
                self.assertEqual(outs[0], [], outs)
                self.assertEqual(outs[1], ['database: discovered'], outs)
                self.assertEqual(outs[2], ['database: cached (Database Hash unchanged)'], outs)
            finally:
                server.stop()

    def test_magic_eight_ball_both_sides(self):
        world, a, b = self.world()
        with world:
            ball = ExampleProc('MagicEightBallPeripheral', '--transport', a, '--name', 'Ball-X', '--questions', '2')
            try:
                self.assertIsNotNone(ball.wait_for(ball.lines, lambda l: l == 'advertising as "Ball-X"'), ball.stderr)
                # hcigatt ask against the example peripheral...
                rc, out, err = hcigatt('ask', 'Ball-X', 'Is hcigatt fast?', '--transport', b)
                self.assertEqual(rc, 0, err)
                self.assertIsNotNone(ball.wait_for(ball.lines, lambda l: l == 'question from' in l or l.startswith('question from')), ball.stderr)
                self.assertIsNotNone(ball.wait_for(ball.lines, lambda l: l == f'answer: {out.strip()}'), ball.lines)
                # ...and the example central against it.
                rc, out, err = example('MagicEightBallCentral', '--transport', b, 'Will it rain?')
                self.assertEqual(rc, 0, err)
                self.assertIsNotNone(ball.wait_for(ball.lines, lambda l: l == f'answer: {out.strip()}'), ball.lines)
                self.assertEqual(ball.proc.wait(timeout=20), 0, ball.stderr)
            finally:
                ball.stop()
        world, a, b = self.world()
        with world:
            server = Proc('serve', '--profile', '8ball', '--name', 'Ball-H', '--transport', a)
            try:
                self.assertIsNotNone(server.wait_for(server.lines, lambda l: l.startswith('advertising')), server.stderr)
                rc, out, err = example('MagicEightBallCentral', '--transport', b, 'Is it Friday?')
                self.assertEqual(rc, 0, err)
                self.assertIsNotNone(server.wait_for(server.lines, lambda l: l == f'answer to' in l or
                                                     l.endswith(f'"{out.strip()}"')), server.lines)
            finally:
                server.stop()

    def test_the_peripheral_example_ends_when_its_controller_goes_away(self):
        world, a, b = self.world()
        with world:
            ball = ExampleProc('MagicEightBallPeripheral', '--transport', a, '--name', 'Ball-Z')
            try:
                self.assertIsNotNone(ball.wait_for(ball.lines, lambda l: l == 'advertising as "Ball-Z"'), ball.stderr)
            finally:
                world.close()  # the virtual controllers go away
                try:
                    rc = ball.proc.wait(timeout=20)
                finally:
                    ball.stop()
            self.assertEqual(rc, 1, ball.stderr)
            self.assertIn('the controller went away', ball.stderr)

    def test_peer_chat_with_hcigatt_chat_both_ways(self):
        world, a, b = self.world()
        with world:
            waiter = Proc('chat', '--name', 'Chat-X', '--transport', a)
            try:
                self.assertIsNotNone(waiter.wait_for(waiter.err, lambda l: 'waiting as' in l), waiter.stderr)
                joiner = ExampleProc('PeerChat', 'Chat-X', '--transport', b)
                try:
                    self.assertIsNotNone(joiner.wait_for(joiner.lines, lambda l: l.startswith('* connected to')), joiner.stderr)
                    self.assertIsNotNone(waiter.wait_for(waiter.err, lambda l: 'receives messages now' in l), waiter.stderr)
                    big = 'x' * 2000
                    joiner.send('hello from the example')
                    joiner.send(big)
                    self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l == 'hello from the example'), waiter.stderr)
                    self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l == big), waiter.stderr)
                    waiter.send('hello back')
                    self.assertIsNotNone(joiner.wait_for(joiner.lines, lambda l: l == 'hello back'), joiner.stderr)
                    self.assertEqual(waiter.stop(), 0, waiter.stderr)
                    self.assertIsNotNone(joiner.wait_for(joiner.lines, lambda l: l.startswith('* ')
                                                         and ('disconnected' in l or 'ended' in l)), joiner.lines)
                finally:
                    joiner.stop()
            finally:
                waiter.stop()
        world, a, b = self.world()
        with world:
            waiter = ExampleProc('PeerChat', '--wait', '--name', 'Chat-Y', '--transport', a)
            try:
                self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l == 'waiting as "Chat-Y"'), waiter.stderr)
                joiner = Proc('chat', 'Chat-Y', '--transport', b)
                try:
                    self.assertIsNotNone(joiner.wait_for(joiner.err, lambda l: l.startswith('connected:')), joiner.stderr)
                    self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l.startswith('* ') and 'joined' in l), waiter.lines)
                    joiner.send('hi example')
                    self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l == 'hi example'), waiter.lines)
                    waiter.send('y' * 1500)
                    self.assertIsNotNone(joiner.wait_for(joiner.lines, lambda l: l == 'y' * 1500), joiner.stderr)
                    joiner.proc.stdin.close()
                    self.assertEqual(joiner.stop(), 0, joiner.stderr)
                    self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l.startswith('* ') and 'left' in l), waiter.lines)
                finally:
                    joiner.stop()
            finally:
                waiter.stop()


if __name__ == '__main__':
    unittest.main()
