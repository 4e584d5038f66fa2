"""hcigatt chat: two hcigatt talking over GATT and over an L2CAP channel, and hcigatt
against a Bumble peripheral serving the Nordic UART Service."""
import json
import unittest

from peer import Peer, hcigatt
from test_l2cap import Proc
from test_serve import Centrals


def long_message(n):
    return ''.join(chr(ord('a') + i % 26) for i in range(n))


class HcigattToHcigattTests(unittest.TestCase):
    def converse(self, *extra):
        with Peer('--hosts', '2') as world:
            a, b = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            waiter = Proc('chat', '--name', 'Chat-1', *extra, '--transport', a)
            try:
                self.assertIsNotNone(waiter.wait_for(waiter.err, lambda l: 'waiting as "Chat-1"' in l), waiter.stderr)
                joiner = Proc('chat', 'Chat-1', *extra, '--transport', b)
                self.assertIsNotNone(joiner.wait_for(joiner.err, lambda l: l.startswith('connected:')), joiner.stderr)
                self.assertIsNotNone(waiter.wait_for(waiter.err, lambda l: l.startswith('connected:')), waiter.stderr)
                if '--l2cap' in extra:
                    self.assertIsNotNone(waiter.wait_for(waiter.err, lambda l: 'channel open with' in l), waiter.stderr)
                big = long_message(5000)
                joiner.send('hello there')
                joiner.send(big)
                joiner.send('ünïcødé ✓')
                self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l == 'hello there'), waiter.stderr)
                self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l == big), 'a 5000-byte message arrives as one line')
                self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l == 'ünïcødé ✓'), waiter.stderr)
                self.assertEqual(waiter.lines, ['hello there', big, 'ünïcødé ✓'], 'nothing else, in order')
                waiter.send('welcome')
                waiter.send(big[::-1])
                self.assertIsNotNone(joiner.wait_for(joiner.lines, lambda l: l == 'welcome'), joiner.stderr)
                self.assertIsNotNone(joiner.wait_for(joiner.lines, lambda l: l == big[::-1]), joiner.stderr)
                # The waiter leaves (Ctrl-C): the joiner sees it and ends cleanly.
                self.assertEqual(waiter.stop(), 0, waiter.stderr)
                self.assertEqual(joiner.proc.wait(timeout=20), 0, joiner.stderr)
                self.assertIn('disconnected:', joiner.stderr)
            finally:
                waiter.stop()

    def test_over_gatt(self):
        self.converse()

    def test_over_an_l2cap_channel(self):
        self.converse('--l2cap')

    def test_the_joiner_leaving_at_end_of_input_and_json_events(self):
        with Peer('--hosts', '2') as world:
            a, b = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            waiter = Proc('chat', '--name', 'Chat-2', '--json', '--transport', a)
            try:
                self.assertIsNotNone(waiter.wait_for(waiter.err, lambda l: 'waiting as' in l), waiter.stderr)
                rc, out, err = hcigatt('chat', 'Chat-2', '--linger', '0.5', '--transport', b, stdin='one\ntwo\n')
                self.assertEqual(rc, 0, err)
                events = lambda: [json.loads(l) for l in waiter.lines]
                self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: '"disconnected"' in l), waiter.stderr)
                kinds = [(e['event'], e.get('text')) for e in events()]
                self.assertEqual(kinds, [('connected', None), ('subscribed', None), ('message', 'one'), ('message', 'two'),
                                         ('unsubscribed', None), ('disconnected', None)], 'the joiner unsubscribes as it leaves')
                self.assertIsNone(waiter.proc.poll(), 'the waiter waits for the next one')
            finally:
                self.assertEqual(waiter.stop(), 0, waiter.stderr)


class AgainstBumbleTests(unittest.TestCase):
    def test_a_bumble_central_talks_to_chat_over_the_uart_service(self):
        uart = '6E400002-B5A3-F393-E0A9-E50E24DCCA9E'
        centrals = Centrals('--centrals', '1', '--target', 'Chat-C', '--listen', '3',
                            '--write', f'{uart}!=' + 'hi from bumble\n'.encode().hex(),
                            '--write', f'{uart}=' + 'with response\n'.encode().hex())
        try:
            waiter = Proc('chat', '--name', 'Chat-C', '--transport', centrals.transport)
            try:
                self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l == 'hi from bumble'), waiter.stderr)
                self.assertIsNotNone(waiter.wait_for(waiter.lines, lambda l: l == 'with response'), waiter.stderr)
                self.assertIsNotNone(waiter.wait_for(waiter.err, lambda l: 'receives messages now' in l), waiter.stderr)
                big = long_message(1200)
                waiter.send(big)
                results, log = centrals.results(1)
                r = results[0]
                self.assertIsNone(r['error'], f'{r["error"]}\n{log}')
                pieces = r['values']['6E400003-B5A3-F393-E0A9-E50E24DCCA9E']
                self.assertEqual([len(p) // 2 for p in pieces], [512, 512, 177], 'ATT_MTU 517: pieces of 512 bytes at most')
                self.assertEqual(bytes.fromhex(''.join(pieces)), (big + '\n').encode())
            finally:
                self.assertEqual(waiter.stop(), 0, waiter.stderr)
        finally:
            centrals.close()

    def test_a_bumble_uart_peripheral_echoes_long_messages_back_whole(self):
        with Peer('--peripheral', 'Uart-B,gatt=uart') as peer:
            big = long_message(3000)
            rc, out, err = hcigatt('chat', 'Uart-B', '--linger', '2', '--transport', peer.transport,
                                   stdin=f'hi\n{big}\n')
            self.assertEqual(rc, 0, err)
            self.assertEqual(out.splitlines(), ['HI', big.upper()], 'echoed in pieces, joined again')
            self.assertIn('connected:', err)
            peer.events.wait_for(lambda e: False, 1.0)  # read what the peer reported
            writes = [e for e in peer.events.events if e.get('event') == 'written' and e.get('uuid', '').startswith('6E400002')]
            self.assertGreater(len(writes), 2, 'the long message went in several writes')
            self.assertTrue(writes[-1]['value'].endswith('0a'), 'each message ends with a newline')

    def test_no_chat_service_and_usage_errors(self):
        with Peer('--peripheral', 'Plain-B,gatt=health') as peer:
            rc, out, err = hcigatt('chat', 'Plain-B', '--transport', peer.transport, stdin='')
            self.assertEqual(rc, 1)
            self.assertIn('has no chat service (6E400001-B5A3-F393-E0A9-E50E24DCCA9E)', err)
        for args in (['chat', 'A', 'B'], ['chat', '--linger', '1'], ['chat', 'X', '--name', 'N'],
                     ['chat', '--psm', '0x100']):
            rc, out, err = hcigatt(*args, '--transport', 'tcp:127.0.0.1:1')
            self.assertEqual(rc, 2, f'{args}: {err}')


if __name__ == '__main__':
    unittest.main()
