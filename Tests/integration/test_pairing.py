"""hcigatt pair against Bumble peripherals: every method, both pairing kinds, refusals."""
import json
import unittest

from peer import Peer, hcigatt

ADDR = 'F0:F1:F2:F3:F4:01/public'


def peripheral(mode):
    return f'Thermo-1,service=1809,gatt=health,pairing={mode}'


class PairTests(unittest.TestCase):
    def pair(self, mode, *args):
        with Peer('--peripheral', peripheral(mode)) as peer:
            rc, out, err = hcigatt('pair', ADDR, '--json', *args, '--transport', peer.transport, timeout=60)
            paired = peer.events.wait_event('paired', 5) if rc == 0 else None
            return rc, out, err, paired

    def check(self, mode, sc, method, authenticated, *args):
        rc, out, err, paired = self.pair(mode, *args)
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual((r['secure_connections'], r['method'], r['authenticated']), (sc, method, authenticated), r)
        self.assertEqual(r['key_size'], 16)
        self.assertTrue(r['bonded'])
        self.assertIn('ltk', r['keys'])
        self.assertEqual(r.get('identity'), 'F0:F1:F2:F3:F4:01 (public)')   # Bumble distributes its IRK
        self.assertIsNotNone(paired, 'the peripheral finished pairing too')
        self.assertTrue(paired['encrypted'])
        return err

    def test_secure_connections_just_works(self):
        self.check('jw', True, 'Just Works', False)

    def test_legacy_just_works(self):
        self.check('legacy', False, 'Just Works', False)

    def test_secure_connections_passkey_typed_from_the_device(self):
        self.check('passkey', True, 'Passkey Entry (shown on the peer)', True, '--passkey', '123456')

    def test_legacy_passkey(self):
        self.check('legacy-passkey', False, 'Passkey Entry (shown on the peer)', True, '--passkey', '123456')

    def test_numeric_comparison(self):
        err = self.check('nc', True, 'Numeric Comparison', True, '--confirm', 'yes')
        self.assertIn('numeric comparison with F0:F1:F2:F3:F4:01 (public): ', err)

    def test_a_wrong_passkey_fails(self):
        rc, out, err, _ = self.pair('passkey', '--passkey', '654321')
        self.assertEqual(rc, 1)
        self.assertIn('Confirm Value Failed', err)

    def test_a_refused_pairing_names_the_reason(self):
        rc, out, err, _ = self.pair('refuse')
        self.assertEqual(rc, 1)
        self.assertIn('Pairing Not Supported', err)

    def test_mitm_required_with_no_io_fails_before_any_key(self):
        rc, out, err, _ = self.pair('jw', '--mitm')
        self.assertEqual(rc, 1)
        self.assertIn('Authentication Requirements', err)

    def test_usage_errors(self):
        for args in (['pair'], ['pair', ADDR, '--passkey', '1234567'], ['pair', ADDR, '--confirm', 'maybe'],
                     ['pair', ADDR, '--io-capability', 'telepathy'], ['pair', ADDR, '--min-key-size', '6'],
                     ['pair', ADDR, '--sc-only', '--legacy-pairing']):
            rc, out, err = hcigatt(*args, '--transport', 'tcp:127.0.0.1:1')
            self.assertEqual(rc, 2, f'{args}: {err}')


if __name__ == '__main__':
    unittest.main()
