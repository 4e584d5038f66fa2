"""hcigatt pair against Bumble peripherals: every method, both pairing kinds, refusals."""
import json
import os
import stat
import tempfile
import unittest

from peer import Peer, hcigatt, json_lines

ADDR = 'F0:F1:F2:F3:F4:01/public'
SECRET = '68636967-6174-7400-8000-00805F9B0003'


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

    def test_a_bond_encrypts_the_next_connection_without_pairing(self):
        with tempfile.TemporaryDirectory() as tmp, Peer('--peripheral', peripheral('jw')) as peer:
            bonds = os.path.join(tmp, 'bonds')
            rc, out, err = hcigatt('pair', ADDR, '--bond-dir', bonds, '--transport', peer.transport, timeout=60)
            self.assertEqual(rc, 0, err)
            self.assertIsNotNone(peer.events.wait_event('paired', 5))
            # The store: a 0700 directory, one 0600 file per identity.
            self.assertEqual(stat.S_IMODE(os.stat(bonds).st_mode), 0o700)
            files = os.listdir(bonds)
            self.assertEqual(files, ['F0F1F2F3F401-public.bond'])
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(bonds, files[0])).st_mode), 0o600)
            rc, out, err = hcigatt('bonds', '--json', '--bond-dir', bonds)
            self.assertEqual(rc, 0, err)
            listed = json.loads(out)
            self.assertEqual((listed['identity'], listed['key_size'], listed['secure_connections']),
                             ('F0:F1:F2:F3:F4:01 (public)', 16, True))
            self.assertIn('ltk', listed['keys'])
            # A new connection: the encrypted read works with the stored key, no pairing.
            rc, out, err = hcigatt('read', ADDR, SECRET, '--bond-dir', bonds, '--transport', peer.transport, timeout=60)
            self.assertEqual(rc, 0, err)
            self.assertIn('"secret"', out)
            self.assertIn('with the stored bond', err)
            # Bonded, but no database kept yet: it says it discovers (and keeps it).
            self.assertIn('discovering...', err.splitlines())
            self.assertIsNone(peer.events.wait_event('paired', 2), 'paired again instead of encrypting')
            rc, out, err = hcigatt('read', ADDR, SECRET, '--bond-dir', bonds, '--transport', peer.transport, timeout=60)
            self.assertEqual(rc, 0, err)
            self.assertNotIn('discovering...', err.splitlines(), 'the database kept with the bond is used')
            self.assertTrue(any(l.startswith('cached') for l in err.splitlines()), err)
            # Forgotten: the next read pairs again.
            rc, out, err = hcigatt('unpair', ADDR, '--bond-dir', bonds)
            self.assertEqual(rc, 0, err)
            self.assertEqual(os.listdir(bonds), [])
            rc, out, err = hcigatt('unpair', ADDR, '--bond-dir', bonds)
            self.assertEqual(rc, 1)

    def test_a_refused_bond_key_drops_the_link_before_any_gatt(self):
        # A device at the bonded address that does not know the key (it forgot the bond, or
        # it is not the device that bonded: BLESA) gets no ATT request at all: the link is
        # dropped and the command fails. The CLI once went on unencrypted.
        with tempfile.TemporaryDirectory() as tmp:
            bonds = os.path.join(tmp, 'bonds')
            with Peer('--peripheral', peripheral('jw')) as peer:
                rc, out, err = hcigatt('pair', ADDR, '--bond-dir', bonds, '--transport', peer.transport, timeout=60)
                self.assertEqual(rc, 0, err)
            with Peer('--peripheral', peripheral('jw')) as stranger:
                for args in (['read', ADDR, '2a19'], ['read', ADDR.split('/')[0], '2a19'], ['gatt', 'Thermo-1']):
                    rc, out, err = hcigatt(*args, '--bond-dir', bonds, '--transport', stranger.transport, timeout=60)
                    self.assertEqual(rc, 1, f'{args}: {err}')
                    self.assertIn("refused the stored bond's key", err)
                    self.assertEqual(out, '')
                self.assertIsNone(stranger.events.wait_event('att', 2), 'an ATT PDU reached a device that refused the key')
                self.assertIsNone(stranger.events.wait_event('paired', 0.1), 'paired again on its own')
                # pair without --repair stops at the refused key as well.
                rc, out, err = hcigatt('pair', ADDR, '--bond-dir', bonds, '--transport', stranger.transport, timeout=60)
                self.assertEqual(rc, 1, err)
                self.assertIn("refused the stored bond's key", err)
                with open(os.path.join(bonds, 'F0F1F2F3F401-public.bond')) as f:
                    before = f.read()
                # The user says so: --repair pairs again; Just Works over a Just Works bond is as
                # strong, so the new bond replaces the old one.
                rc, out, err = hcigatt('pair', ADDR, '--repair', '--json', '--bond-dir', bonds, '--transport', stranger.transport,
                                       timeout=60)
                self.assertEqual(rc, 0, err)
                self.assertTrue(json.loads(out)['bonded'])
                self.assertIsNotNone(stranger.events.wait_event('paired', 5))
                with open(os.path.join(bonds, 'F0F1F2F3F401-public.bond')) as f:
                    self.assertNotEqual(f.read(), before, 'the new bond replaced the refused one')
            self.assertEqual(os.listdir(bonds), ['F0F1F2F3F401-public.bond'])

    def test_a_private_address_resolves_to_the_bonded_identity(self):
        # The peripheral advertises from a resolvable private address, a new one each run;
        # its IRK, distributed when pairing, lets the next run find it by identity.
        with tempfile.TemporaryDirectory() as tmp:
            bonds = os.path.join(tmp, 'bonds')
            spec = f'Thermo-1,service=1809,gatt=health,pairing=jw,privacy,keystore={tmp}/peer-keys.json'
            with Peer('--peripheral', spec) as peer:
                first = peer.ready['peripherals'][0]
                self.assertEqual(first['identity'], 'F0:F1:F2:F3:F4:01')
                rc, out, err = hcigatt('pair', 'Thermo-1', '--json', '--bond-dir', bonds, '--transport', peer.transport,
                                       timeout=60)
                self.assertEqual(rc, 0, err)
                r = json.loads(out)
                self.assertEqual(r['address'], first['address'] + ' (resolvable-private)')
                self.assertEqual(r['identity'], 'F0:F1:F2:F3:F4:01 (public)')
                self.assertIn('irk', r['keys'])
                self.assertIsNotNone(peer.events.wait_event('paired', 5))
                self.assertEqual(os.listdir(bonds), ['F0F1F2F3F401-public.bond'])
            with Peer('--peripheral', spec) as peer:
                rpa = peer.ready['peripherals'][0]['address']
                self.assertNotEqual(rpa, first['address'], 'a new run, a new private address')
                # scan names the identity behind the new address
                rc, out, err = hcigatt('scan', '--json', '--duration', '1.5', '--bond-dir', bonds,
                                       '--transport', peer.transport, timeout=60)
                self.assertEqual(rc, 0, err)
                seen = [d for d in json_lines(out) if d.get('address') == rpa]
                self.assertTrue(seen, out)
                self.assertEqual((seen[0]['address_kind'], seen[0]['identity'], seen[0]['identity_type']),
                                 ('resolvable-private', 'F0:F1:F2:F3:F4:01', 'public'))
                # without the bond, nobody knows who it is
                rc, out, err = hcigatt('scan', '--json', '--duration', '1.5', '--transport', peer.transport, timeout=60)
                self.assertEqual(rc, 0, err)
                self.assertTrue(all('identity' not in d for d in json_lines(out) if 'address' in d), out)
                # the identity address finds it behind the RPA; the bond encrypts, no pairing
                rc, out, err = hcigatt('read', ADDR.split('/')[0], SECRET, '--bond-dir', bonds,
                                       '--transport', peer.transport, timeout=60)
                self.assertEqual(rc, 0, err)
                self.assertIn('"secret"', out)
                self.assertIn(f'{rpa} is a private address of F0:F1:F2:F3:F4:01 (public', err)
                self.assertIn('with the stored bond', err)
                self.assertIsNone(peer.events.wait_event('paired', 2), 'paired again instead of encrypting')

    def test_a_bonded_database_is_kept_and_checked_by_bumbles_hash(self):
        # Bumble's server computes a Database Hash too: the kept database is reused after one read.
        with tempfile.TemporaryDirectory() as tmp, Peer('--peripheral', peripheral('jw')) as peer:
            bonds = os.path.join(tmp, 'bonds')
            rc, out, err = hcigatt('pair', ADDR, '--bond-dir', bonds, '--transport', peer.transport, timeout=60)
            self.assertEqual(rc, 0, err)
            runs = []
            for _ in range(2):
                rc, out, err = hcigatt('gatt', ADDR, '--json', '--no-values', '--bond-dir', bonds,
                                       '--transport', peer.transport, timeout=60)
                self.assertEqual(rc, 0, err)
                runs.append((json.loads(out), err))
            (first, _), (second, err) = runs
            self.assertEqual(first['database_source'], 'discovered')
            self.assertEqual(second['database_source'], 'cache-hash-unchanged', err)
            self.assertEqual(second['services'], first['services'])
            self.assertEqual(second['discovery_round_trips'], 2, 'Exchange MTU and the hash')
            self.assertGreater(first['discovery_round_trips'], 6)
            # A corrupt cache is named and replaced by a discovery.
            cache = os.path.join(bonds, 'F0F1F2F3F401-public.gatt-cache')
            with open(cache, 'w') as f:
                f.write('version=1\nservice=zz\n')
            rc, out, err = hcigatt('gatt', ADDR, '--json', '--no-values', '--bond-dir', bonds,
                                   '--transport', peer.transport, timeout=60)
            self.assertEqual(rc, 0, err)
            self.assertIn(cache, err)
            self.assertEqual(json.loads(out)['database_source'], 'discovered')
            with open(cache) as f:
                self.assertNotIn('zz', f.read())

    def test_a_corrupt_bond_file_is_named_and_kept(self):
        with tempfile.TemporaryDirectory() as bonds:
            path = os.path.join(bonds, 'F0F1F2F3F401-public.bond')
            with open(path, 'w') as f:
                f.write('version=1\nidentity=F0:F1:F2:F3:F4:01/public\nltk=not-hex\n')
            rc, out, err = hcigatt('bonds', '--bond-dir', bonds)
            self.assertEqual(rc, 1)
            self.assertIn(path, err)
            with open(path) as f:
                self.assertIn('not-hex', f.read(), 'the file is left as it was')

    def test_usage_errors(self):
        for args in (['pair'], ['pair', ADDR, '--passkey', '1234567'], ['pair', ADDR, '--confirm', 'maybe'],
                     ['pair', ADDR, '--io-capability', 'telepathy'], ['pair', ADDR, '--min-key-size', '6'],
                     ['pair', ADDR, '--sc-only', '--legacy-pairing']):
            rc, out, err = hcigatt(*args, '--transport', 'tcp:127.0.0.1:1')
            self.assertEqual(rc, 2, f'{args}: {err}')


if __name__ == '__main__':
    unittest.main()
