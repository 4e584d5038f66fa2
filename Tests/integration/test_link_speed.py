"""Faster links: after connecting, hcigatt asks for the longest data length and for LE 2M
(or what --phy says), and reports what the link settled on. The virtual controllers
(bumble_peer.py's HostController) run both procedures with the peer's controller on the
link; --refuse-speed-ups makes hcigatt's controller refuse them, as older parts do."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer import Peer, hcigatt  # noqa: E402
from test_serve import Serve  # noqa: E402


class LinkSpeedTests(unittest.TestCase):
    def gatt(self, peer_args, *args):
        with Peer(*peer_args, '--peripheral', 'Thermo-1,gatt=health') as peer:
            rc, out, err = hcigatt('gatt', 'Thermo-1', '--transport', peer.transport, '--json', *args)
            self.assertEqual(rc, 0, err + peer.stderr())
            return json.loads(out)['link'], err

    def test_the_longest_data_length_and_2m_by_default(self):
        link, err = self.gatt(())
        self.assertEqual((link['tx_phy'], link['rx_phy']), ('LE 2M', 'LE 2M'), link)
        self.assertEqual((link['max_tx_octets'], link['max_rx_octets']), (251, 251), link)
        self.assertIn('data length: 251 bytes (17040 µs) out, 251 bytes (2120 µs) in', err)
        self.assertIn('PHY: LE 2M', err)

    def test_phy_options_and_no_data_length(self):
        link, err = self.gatt((), '--phy', 'coded')
        self.assertEqual((link['tx_phy'], link['rx_phy']), ('LE Coded', 'LE Coded'))
        link, err = self.gatt((), '--phy', '2m', '--no-data-length')
        self.assertEqual((link['tx_phy'], link['max_tx_octets']), ('LE 2M', 27))
        self.assertNotIn('data length:', err)
        link, err = self.gatt((), '--phy', '1m')
        self.assertEqual((link['tx_phy'], link['rx_phy']), ('LE 1M', 'LE 1M'))
        self.assertNotIn('PHY:', err, 'nothing to ask for: links start on LE 1M')

    def test_a_controller_that_refuses_is_said_once_and_the_link_goes_on(self):
        link, err = self.gatt(('--refuse-speed-ups',), '--phy', '2m')
        self.assertEqual((link['tx_phy'], link['max_tx_octets']), ('LE 1M', 27))
        self.assertEqual(err.count('a longer data length was not taken'), 1, err)
        self.assertIn('LE Set Data Length refused', err)
        self.assertEqual(err.count('the PHY asked for was not taken'), 1, err)
        self.assertIn('the link stays on LE 1M', err)

    def test_our_peripheral_takes_the_centrals_requests(self):
        # hcigatt on both ends: serve's controller answers what gatt's asks for.
        with Peer('--hosts', '2') as world:
            a, b = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            with Serve(a, '--profile', 'battery', '--name', 'Speedy-1') as serve:
                rc, out, err = hcigatt('gatt', 'Speedy-1', '--transport', b, '--json')
                self.assertEqual(rc, 0, err)
                link = json.loads(out)['link']
                self.assertEqual((link['tx_phy'], link['max_tx_octets'], link['max_rx_octets']), ('LE 2M', 251, 251), link)
                self.assertEqual(serve.close(), 0, serve.stderr())


if __name__ == '__main__':
    unittest.main()
