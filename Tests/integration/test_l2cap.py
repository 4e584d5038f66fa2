"""hcigatt l2cap (LE credit-based channels) between two hcigatt and against Bumble."""
import os
import signal
import subprocess
import tempfile
import threading
import time
import unittest

from peer import HCIGATT, Peer, hcigatt
from test_serve import Centrals


class Proc:
    """An hcigatt process with stdin kept open and stdout read line by line."""

    def __init__(self, *args, program=HCIGATT):
        env = dict(os.environ, HCIGATT_BOND_DIR=tempfile.mkdtemp())
        self.proc = subprocess.Popen([program, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines = []
        self.err = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True).start()

    def _read(self, f, into):
        for line in f:
            with self.cond:
                into.append(line.rstrip('\n'))
                self.cond.notify_all()

    def wait_for(self, where, pred, timeout=15):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in where:
                    if pred(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def send(self, text):
        self.proc.stdin.write(text + '\n')
        self.proc.stdin.flush()

    def stop(self, sig=signal.SIGINT):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    @property
    def stderr(self):
        with self.cond:
            return '\n'.join(self.err)


class AgainstBumbleTests(unittest.TestCase):
    def test_sdus_both_ways_through_a_slow_crediting_bumble_server(self):
        # Bumble's server takes K-frames of 64 bytes and gives 2 credits at a time.
        with Peer('--peripheral', 'Pipe-B,l2cap=0x80:2048:64:2') as peer:
            big = ''.join(chr(ord('A') + i % 26) for i in range(1500))
            rc, out, err = hcigatt('l2cap', 'connect', 'Pipe-B', '0x80', '--mtu', '2048', '--linger', '2',
                                   '--transport', peer.transport, stdin=f'hello\n{big}\nbye\n')
            self.assertEqual(rc, 0, err)
            self.assertEqual(out.splitlines(), ['hello', big, 'bye'], 'echoed back whole, in order')
            opened = peer.events.wait_event('l2cap-open', 5)
            self.assertEqual((opened['peer_mtu'], opened['peer_mps']), (2048, 247), 'what we take')
            sdus = [peer.events.wait_event('l2cap-sdu', 5, length=n) for n in (5, 1500, 3)]
            self.assertTrue(all(sdus), peer.events.events)
            self.assertEqual(sdus[1]['sum'], sum(big.encode()))
            self.assertIsNotNone(peer.events.wait_event('l2cap-closed', 5), 'we closed the channel at the end')

    def test_a_refused_psm_and_a_channel_closed_mid_sdu(self):
        with Peer('--peripheral', 'Pipe-B,l2cap=0x80:65535:23:4,l2cap_close_after=0.5,l2cap_stingy') as peer:
            rc, out, err = hcigatt('l2cap', 'connect', 'Pipe-B', '0x81', '--transport', peer.transport, stdin='x\n')
            self.assertEqual(rc, 1)
            self.assertIn('SPSM not supported (0x0002)', err)
            # The server gives 4 credits and no more: 4 K-frames of the SDU go, then our send
            # waits until the server closes the channel.
            huge = 'z' * 2000
            rc, out, err = hcigatt('l2cap', 'connect', 'Pipe-B', '0x80', '--mtu', '23', '--transport', peer.transport,
                                   stdin=huge + '\n')
            self.assertEqual(rc, 1, err)
            self.assertIn('disconnected by the peer', err)
            self.assertIsNone(peer.events.wait_event('l2cap-sdu', 1), 'no half SDU was delivered')

    def test_a_bumble_central_opens_a_channel_to_listen(self):
        centrals = Centrals('--centrals', '1', '--target', 'Pipe-L', '--listen', '1.5', '--l2cap', '0x85',
                            '--l2cap-send', 'ping', '--l2cap-send', 'q' * 900)
        try:
            listener = Proc('l2cap', 'listen', '0x85', '--name', 'Pipe-L', '--mtu', '1000', '--transport', centrals.transport)
            try:
                self.assertIsNotNone(listener.wait_for(listener.err, lambda l: 'channel from' in l), listener.stderr)
                self.assertIsNotNone(listener.wait_for(listener.lines, lambda l: l == 'ping'), listener.stderr)
                self.assertIsNotNone(listener.wait_for(listener.lines, lambda l: l == 'q' * 900), 'a 900-byte SDU in 64-byte K-frames')
                listener.send('pong')
                results, log = centrals.results(1)
                self.assertEqual(len(results), 1, log)
                r = results[0]
                self.assertIsNone(r['error'], f'{r["error"]}\n{log}')
                self.assertEqual(r['l2cap']['received'], ['pong'])
                self.assertEqual((r['l2cap']['peer_mtu'], r['l2cap']['peer_mps']), (1000, 247))
            finally:
                self.assertEqual(listener.stop(), 0, listener.stderr)
        finally:
            centrals.close()


class HcigattToHcigattTests(unittest.TestCase):
    def test_both_ways_with_sdus_larger_than_mps_and_a_quitting_peer(self):
        with Peer('--hosts', '2') as world:
            a, b = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            listener = Proc('l2cap', 'listen', '0x80', '--name', 'Pipe-1', '--mtu', '4000', '--transport', a)
            try:
                self.assertIsNotNone(listener.wait_for(listener.err, lambda l: 'listening on PSM 0x0080' in l), listener.stderr)
                big = ''.join(chr(ord('a') + i % 26) for i in range(3000))
                client = Proc('l2cap', 'connect', 'Pipe-1', '128', '--mtu', '4000', '--linger', '2', '--transport', b)
                self.assertIsNotNone(client.wait_for(client.err, lambda l: 'channel open' in l), client.stderr)
                self.assertIsNotNone(listener.wait_for(listener.err, lambda l: 'channel from' in l), listener.stderr)
                client.send('hello')
                client.send(big)
                self.assertIsNotNone(listener.wait_for(listener.lines, lambda l: l == 'hello'), listener.stderr)
                self.assertIsNotNone(listener.wait_for(listener.lines, lambda l: l == big), 'the 3000-byte SDU arrives whole')
                listener.send('welcome')
                self.assertIsNotNone(client.wait_for(client.lines, lambda l: l == 'welcome'), client.stderr)
                # The client quits at end of stdin: the listener sees the channel close and waits on.
                client.proc.stdin.close()
                self.assertEqual(client.stop(), 0, client.stderr)
                self.assertIsNotNone(listener.wait_for(listener.err, lambda l: 'closed' in l), listener.stderr)
                self.assertIsNone(listener.proc.poll(), 'listen keeps listening')
            finally:
                self.assertEqual(listener.stop(), 0, listener.stderr)

    def test_a_psm_nobody_listens_on_is_refused(self):
        with Peer('--hosts', '2') as world:
            a, b = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            listener = Proc('l2cap', 'listen', '0x80', '--name', 'Pipe-2', '--transport', a)
            try:
                self.assertIsNotNone(listener.wait_for(listener.err, lambda l: 'listening' in l), listener.stderr)
                rc, out, err = hcigatt('l2cap', 'connect', 'Pipe-2', '0x81', '--transport', b, stdin='')
                self.assertEqual(rc, 1)
                self.assertIn('SPSM not supported (0x0002)', err)
            finally:
                listener.stop()

    def test_usage_errors(self):
        for args in (['l2cap'], ['l2cap', 'listen'], ['l2cap', 'listen', '0x100'], ['l2cap', 'connect', 'X'],
                     ['l2cap', 'listen', '0x80', '--mtu', '22'], ['l2cap', 'dance', '0x80'],
                     ['l2cap', 'listen', '0x80', '--linger', '1'], ['l2cap', 'connect', 'X', '0x80', '--name', 'N']):
            rc, out, err = hcigatt(*args, '--transport', 'tcp:127.0.0.1:1')
            self.assertEqual(rc, 2, f'{args}: {err}')


if __name__ == '__main__':
    unittest.main()
