#!/usr/bin/env python3
"""A virtual Bluetooth LE world behind the real kernel's hci_vhci driver (run in the VM).

Opens /dev/vhci once per --controllers and drives each with a Bumble Controller, so the
kernel gets adapters hci0, hci1, ... (public addresses --address-prefix:01, :02, ...).
All of them share one LocalLink (bumble_peer.PeerLink) with the --peripheral GATT
peripherals from Tests/peer (same spec syntax as bumble_peer.py; gatt=health serves the
test database from gatt_db.py).

When every adapter exists (the kernel answered with its index and /sys/class/bluetooth
shows it), prints one JSON line: {"ready": true, "controllers": [{"index": N,
"address": ...}], "peripherals": [...]}, then the peripherals' event lines
(peer_events.py). Runs until SIGTERM/SIGINT.

What the kernel needs from this side:
  * the Bumble controller exists before the vhci device is created: the kernel sends
    its setup commands as soon as it registers hciN;
  * a write the kernel refuses (ENXIO while hciN is down, for one) is dropped and
    counted — Bumble's own vhci transport would die on it;
  * the controller is bumble_peer's HostController: a reset ends its links (the kernel
    drops an adapter taken down without disconnecting; the user channel's reset must
    free the peripheral it was connected to).
"""
import argparse
import asyncio
import errno
import json
import logging
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'peer'))

from bumble_peer import HostController, PeerLink, parse_peripheral, peripheral_info, start_peripheral  # noqa: E402
from peer_events import EventWriter  # noqa: E402

HCI_VENDOR_PKT = 0xFF
HCI_PRIMARY = 0x00  # vhci device type (HCI_PRIMARY, formerly HCI_BREDR)

logger = logging.getLogger('vhci_world')


class VhciController:
    """One /dev/vhci file: the kernel's side of one virtual adapter, and the Bumble
    controller answering it."""

    def __init__(self, name, link, address, path='/dev/vhci'):
        self.name = name
        self.address = address
        self.index = None
        self.created = asyncio.get_running_loop().create_future()
        self.dropped = 0
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        # The controller first (host_sink=self: what it sends goes to the kernel) ...
        self.controller = HostController(name, host_sink=self, link=link, public_address=address)
        asyncio.get_running_loop().add_reader(self.fd, self.readable)
        # ... then ask the kernel to create the adapter.
        os.write(self.fd, bytes([HCI_VENDOR_PKT, HCI_PRIMARY]))

    # Bumble calls this with each packet (H4 indicator first) for the host: the kernel.
    def on_packet(self, packet):
        try:
            os.write(self.fd, packet)
        except OSError as e:
            # ENXIO: hciN is down and takes nothing; other errors: the same, drop it.
            self.dropped += 1
            if e.errno != errno.ENXIO:
                logger.warning('%s: write to vhci failed: %s', self.name, e)

    def readable(self):
        try:
            packet = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        except OSError as e:
            logger.warning('%s: read from vhci failed: %s', self.name, e)
            return
        if not packet:
            return
        if packet[0] == HCI_VENDOR_PKT:
            # The kernel's answer to the create request: 0xFF, type, index (little endian).
            if len(packet) >= 4 and not self.created.done():
                self.index = packet[2] | packet[3] << 8
                self.created.set_result(self.index)
            return
        try:
            self.controller.on_packet(packet)
        except Exception:  # a packet Bumble cannot parse must not stop the world
            logger.exception('%s: packet from the kernel failed: %s', self.name, packet.hex())


async def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--controllers', type=int, default=2, help='how many vhci adapters')
    parser.add_argument('--address-prefix', default='C0:FF:EE:00:00',
                        help='adapter N gets PREFIX:(N+1) as its public address')
    parser.add_argument('--peripheral', action='append', default=[],
                        help="NAME[,service=UUID]...[,gatt=health]... (bumble_peer.py's syntax)")
    parser.add_argument('--notify-interval', type=float, default=0.2)
    parser.add_argument('--vhci', default='/dev/vhci')
    parser.add_argument('--verbose', action='store_true')
    args = parser.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)

    link = PeerLink()
    events = EventWriter(sys.stdout)
    peripherals = []
    for index, spec in enumerate(args.peripheral):
        p = parse_peripheral(spec, index)
        await start_peripheral(link, index, p, events, database=p['gatt'],
                               notify_interval=args.notify_interval, disconnect_after=None,
                               conn_params=None, conn_params_delay=0.1, ignore_att_after=None,
                               log_att=False)
        peripherals.append(peripheral_info(p, p['gatt']))

    adapters = []
    for n in range(args.controllers):
        adapters.append(VhciController(f'vhci{n}', link, f'{args.address_prefix}:{n + 1:02X}', args.vhci))
    controllers = []
    for adapter in adapters:
        index = await asyncio.wait_for(adapter.created, timeout=10)
        sysfs = f'/sys/class/bluetooth/hci{index}'
        for _ in range(100):
            if os.path.exists(sysfs):
                break
            await asyncio.sleep(0.1)
        else:
            raise SystemExit(f'vhci_world: the kernel gave index {index} but {sysfs} did not appear')
        controllers.append({'index': index, 'address': adapter.address})

    print(json.dumps({'ready': True, 'controllers': controllers, 'peripherals': peripherals}), flush=True)
    events.start(asyncio.get_running_loop())

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for adapter in adapters:
        logger.info('%s (hci%s): %d writes dropped', adapter.name, adapter.index, adapter.dropped)
        loop.remove_reader(adapter.fd)
        os.close(adapter.fd)


if __name__ == '__main__':
    asyncio.run(main())
