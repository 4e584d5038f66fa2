"""Hostile peers against hcigatt (issue: security hardening): Bumble centrals that try what
an attacker would, each outcome checked in hcigatt's output and its files."""
import json
import os
import tempfile
import unittest

from peer import Peer, hcigatt
from test_serve import Centrals, Serve


class HostileCentralTests(unittest.TestCase):
    def test_a_plain_central_subscribing_to_protected_values_is_refused_and_hears_nothing(self):
        # Heart rate notifies every second; with --security encrypted its values need an
        # encrypted link: subscribing on a plain one is refused (Insufficient Encryption),
        # and nothing is sent to that central in clear.
        for pair in (False, True):
            args = ['--centrals', '1', '--target', 'Pulse-X', '--listen', '2.5', '--record'] + (['--pair'] if pair else [])
            centrals = Centrals(*args)
            bonds = tempfile.TemporaryDirectory()
            try:
                with Serve(centrals.transport, '--profile', 'heartrate', '--name', 'Pulse-X', '--security', 'encrypted',
                           '--bond-dir', bonds.name) as serve:
                    results, log = centrals.results(1)
                    self.assertEqual(len(results), 1, log)
                    r = results[0]
                    self.assertIsNone(r['error'], f'{r["error"]}\n{log}\n{serve.stderr()}')
                    if not pair:
                        self.assertEqual(r['subscribe_errors'].get('2A37'), 0x0F, r)
                        self.assertEqual(r['values'].get('2A37'), [], r)
                        self.assertEqual(r['received'], [], 'a value went out in clear text')
                    else:
                        self.assertEqual(r['subscribe_errors'], {}, r)
                        self.assertGreater(len(r['values']['2A37']), 0, r)
                    self.assertEqual(serve.close(), 0, serve.stderr())
            finally:
                centrals.close()
                bonds.cleanup()

    def test_an_impostor_re_pairing_just_works_over_a_bond_is_refused(self):
        # A central bonds (Just Works, as every bond is with the default IO capability). A
        # second one with its address and no keys pairs again: refused, the bond file left as
        # it was; with --allow-repairing it replaces the bond.
        with tempfile.TemporaryDirectory() as tmp:
            bonds = os.path.join(tmp, 'bonds')

            def run(keys, *serve_args):
                centrals = Centrals('--centrals', '1', '--target', 'Bond-X', '--listen', '0.5', '--no-subscribe',
                                    '--pair', '--keystore', os.path.join(tmp, keys))
                try:
                    with Serve(centrals.transport, '--profile', 'battery', '--name', 'Bond-X', '--bond-dir', bonds,
                               *serve_args) as serve:
                        results, log = centrals.results(1)
                        self.assertEqual(len(results), 1, log)
                        paired = serve.wait('paired', 2)
                        self.assertEqual(serve.close(), 0, serve.stderr())
                        return results[0], paired, serve.stderr()
                finally:
                    centrals.close()

            def bond_file():
                with open(os.path.join(bonds, 'D0D1D2D3D401-public.bond')) as f:
                    return f.read()

            r, paired, err = run('victim.json')
            self.assertIsNone(r['error'], err)
            self.assertIsNotNone(paired, err)
            before = bond_file()

            r, paired, err = run('impostor.json')
            self.assertIsNotNone(r['error'], 'the impostor paired')
            self.assertIsNone(paired, err)
            self.assertEqual(bond_file(), before, 'the bond was replaced')

            r, paired, err = run('impostor.json', '--allow-repairing')
            self.assertIsNone(r['error'], err)
            self.assertIsNotNone(paired, err)
            self.assertNotEqual(bond_file(), before, 'allowed, the new pairing replaces the bond')

    def test_an_impostor_claiming_a_bonded_identity_with_its_own_irk_is_refused(self):
        # The victim bonds from its public address (its IRK goes with the bond). The impostor
        # connects from a private address of an IRK of its own, pairs Just Works and
        # distributes (its IRK, the victim's identity): the identity is not proven by the
        # victim's bond, so the pairing fails, the link goes, and the victim's bond and
        # server record stay byte for byte.
        with tempfile.TemporaryDirectory() as tmp:
            bonds = os.path.join(tmp, 'bonds')

            def run(keys, *central_args):
                centrals = Centrals('--centrals', '1', '--target', 'Bond-I', '--listen', '0.5', '--pair',
                                    '--keystore', os.path.join(tmp, keys), *central_args)
                try:
                    with Serve(centrals.transport, '--profile', 'heartrate', '--name', 'Bond-I', '--bond-dir', bonds) as serve:
                        results, log = centrals.results(1)
                        self.assertEqual(len(results), 1, log)
                        paired = serve.wait('paired', 2)
                        failed = serve.wait('pairing-failed', 2)
                        self.assertEqual(serve.close(), 0, serve.stderr())
                        return results[0], paired, failed, serve.stderr()
                finally:
                    centrals.close()

            def files():
                out = {}
                for name in sorted(os.listdir(bonds)):
                    with open(os.path.join(bonds, name), 'rb') as f:
                        out[name] = f.read()
                return out

            r, paired, _, err = run('victim.json')
            self.assertIsNone(r['error'], err)
            self.assertIsNotNone(paired, err)
            self.assertEqual(paired.get('identity', 'D0:D1:D2:D3:D4:01 (public)').split(' ')[0], 'D0:D1:D2:D3:D4:01', paired)
            before = files()
            self.assertIn('D0D1D2D3D401-public.bond', before)
            self.assertIn('irk=', before['D0D1D2D3D401-public.bond'].decode())

            r, paired, failed, err = run('impostor.json', '--claim-identity')
            self.assertIsNone(paired, f'the impostor paired: {paired}\n{err}')
            self.assertIsNotNone(failed, err)
            self.assertIn('does not resolve', failed['message'])
            self.assertEqual(files(), before, "the victim's bond and server record changed")


class SpooferAtABondedAddressTests(unittest.TestCase):
    """A Bumble peripheral at a bonded device's address without its keys: the links hcigatt
    opens in clear there (a signed write's; a bond with no central key) must not write or
    read the bonded device's GATT cache (the spoofer's database would be used later, on
    encrypted links with the real device)."""

    BOND = ('version=1\nidentity=F0:F1:F2:F3:F4:01/public\nsecure_connections=0\nauthenticated=0\nkey_size=16\n'
            '{keys}created=1800000000\n')

    def run_against_spoofer(self, keys, *command):
        with tempfile.TemporaryDirectory() as bonds:
            os.chmod(bonds, 0o700)
            with open(os.path.join(bonds, 'F0F1F2F3F401-public.bond'), 'w') as f:
                f.write(self.BOND.format(keys=keys))
            with Peer('--peripheral', 'Thermo-1,service=1809,gatt=health') as peer:
                rc, out, err = hcigatt(*command[:1], 'F0:F1:F2:F3:F4:01/public', *command[1:], '--bond-dir', bonds,
                                       '--transport', peer.transport, timeout=60)
            return rc, out, err, sorted(os.listdir(bonds))

    def test_a_bond_without_a_central_key_connects_in_clear_and_keeps_no_cache(self):
        # Only the key we handed out as peripheral (legacy): nothing to encrypt with as central.
        rc, out, err, files = self.run_against_spoofer('local_ltk=00112233445566778899aabbccddeeff\nlocal_ediv=7\nlocal_rand=9\n',
                                                       'gatt', '--no-values', '--json')
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)['database_source'], 'discovered')
        self.assertEqual(files, ['F0F1F2F3F401-public.bond'], 'a cache written from a link in clear')

    def test_a_signed_writes_plain_link_keeps_no_cache(self):
        rc, out, err, files = self.run_against_spoofer(
            'ltk=00112233445566778899aabbccddeeff\nlocal_csrk=0102030405060708090a0b0c0d0e0f10\n',
            'write', '2A21', '0100', '--signed')
        self.assertNotIn('.gatt-cache', ' '.join(files), f'a cache written from a link in clear: {err}')


class HostilePeripheralTests(unittest.TestCase):
    """`hcigatt pair` against Bumble peripherals whose SMP attacks (bumble_peer's HostileSession)."""

    def pair(self, mode):
        with tempfile.TemporaryDirectory() as bonds, \
                Peer('--peripheral', f'Thermo-1,service=1809,gatt=health,pairing={mode}') as peer:
            rc, out, err = hcigatt('pair', 'F0:F1:F2:F3:F4:01/public', '--json', '--bond-dir', bonds,
                                   '--transport', peer.transport, timeout=60)
            paired = peer.events.wait_event('paired', 1)
            return rc, err, paired, os.listdir(bonds) if os.path.isdir(bonds) else []

    def test_sm_cen_kdu_bi_04_c_our_own_public_key_sent_back_with_either_y_is_refused(self):
        # The reflection of CVE-2020-26558: the peripheral answers with the central's own
        # public key, as it is or with p - y. DHKey Check Failed, no key, no bond.
        for mode in ('reflect', 'reflect-y'):
            with self.subTest(mode=mode):
                rc, err, paired, files = self.pair(mode)
                self.assertEqual(rc, 1, err)
                self.assertIn('our own public key back', err)
                self.assertIn('DHKey Check Failed', err)
                self.assertIsNone(paired, 'the peripheral finished pairing')
                self.assertEqual([f for f in files if f.endswith('.bond')], [], 'a bond was kept')

    def test_an_smp_pdu_out_of_order_ends_the_pairing(self):
        # A DHKey Check where the Pairing Confirm belongs: Unspecified Reason, no bond.
        rc, err, paired, files = self.pair('disorder')
        self.assertEqual(rc, 1, err)
        self.assertIn('Unspecified Reason', err)
        self.assertIsNone(paired)
        self.assertEqual([f for f in files if f.endswith('.bond')], [], 'a bond was kept')


if __name__ == '__main__':
    unittest.main()
