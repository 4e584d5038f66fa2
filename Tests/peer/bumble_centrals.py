#!/usr/bin/env python3
"""Bumble GATT centrals against `hcigatt serve`, on one simulated link.

Creates the TCP controller hcigatt drives (as bumble_peer.py does) and --centrals N Bumble
Devices on controllers of their own. Prints {"ready": true, "port": N} once up; then each
central scans for the advertiser named --target, connects, exchanges MTU 517, discovers
everything, reads every readable characteristic and descriptor, runs the writes asked
for with --write UUID=HEX (and reports the ATT error of refused ones), subscribes to
every characteristic that notifies or indicates, collects values for --listen seconds,
unsubscribes and disconnects. Each central prints one JSON result line:

  {"central": i, "mtu": 517, "services": [...], "reads": {uuid: hex | "error 0xNN"},
   "writes": [{"uuid", "value", "error"}], "values": {uuid: [hex, ...]},
   "arrivals": [[uuid, hex], ...] (all values in the order they came), "error": null}

--write-after-subscribing UUID=HEX writes once subscribed (a control point such as RACP
answers on the characteristics it needs subscribed), reported in "late_writes".

then keeps the world up until SIGTERM (checks are the test's business).

Bonds across runs: --keystore FILE keeps the centrals' keys in a JSON file; a later run
with --encrypt encrypts with them instead of pairing. --keep-subscribed leaves the CCCDs
enabled when disconnecting, --no-subscribe writes none (--skip-subscribe UUID: not that one), --subscribe-service-changed
enables Service Changed indications, and --record puts every notification and indication
received from the moment of connecting, subscribed or not, in "received":
[{"kind", "handle", "value"}] (what a bonded client gets without asking again).
"""
import argparse
import asyncio
import json
import logging
import secrets
import signal
import time

from bumble import att, hci
from bumble.controller import Controller
from bumble.device import Device, Peer
from bumble.host import Host
from bumble.keys import JsonKeyStore
from bumble.l2cap import LeCreditBasedChannelSpec
from bumble.transport.common import AsyncPipeSink

from bumble_peer import PeerLink, modern_link_layer, start_host_controller


def uuid_text(uuid) -> str:
    return uuid.to_hex_str('-')


async def find(device: Device, name: str, timeout: float):
    """Scans until an advertiser with this complete or shortened local name shows up."""
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        local = advertisement.data.get(0x09) or advertisement.data.get(0x08)
        if isinstance(local, bytes):
            local = local.decode(errors='replace')
        if local == name and not found.done():
            found.set_result(advertisement.address)

    device.on('advertisement', on_advertisement)
    await device.start_scanning(active=False, filter_duplicates=False)
    try:
        return await asyncio.wait_for(found, timeout)
    finally:
        device.remove_listener('advertisement', on_advertisement)
        await device.stop_scanning()


async def run_central(index: int, device: Device, args, turns) -> dict:
    result = {'central': index, 'error': None}
    started = time.monotonic()
    try:
        # Bumble's link completes a central's connection even when the peripheral stopped
        # advertising for another one a moment before (a radio would not): the centrals
        # connect one after the other, --stagger seconds apart, and then run at once.
        if index > 0:
            await turns[index - 1].wait()
            await asyncio.sleep(args.stagger)
        try:
            address = await find(device, args.target, args.scan_timeout)
            own = hci.OwnAddressType.PUBLIC
            if args.claim_identity:
                # An impostor: an IRK of its own and a private address made with it; pairing
                # distributes that IRK with the public address (another device's identity).
                device.irk = secrets.token_bytes(16)
                rpa = hci.Address.generate_private_address(device.irk)
                await device.send_command(hci.HCI_LE_Set_Random_Address_Command(random_address=rpa), check_result=True)
                device.random_address = rpa
                own = hci.OwnAddressType.RANDOM
                result['address'] = str(rpa)
            connection = await asyncio.wait_for(device.connect(address, own_address_type=own), 15)
        finally:
            turns[index].set()
        if args.l2cap is not None:
            # An LE credit-based channel instead of GATT: send, collect the answers, close.
            spec = LeCreditBasedChannelSpec(psm=args.l2cap, mtu=2048, mps=args.l2cap_mps, max_credits=args.l2cap_credits)
            channel = await asyncio.wait_for(connection.create_l2cap_channel(spec=spec), 15)
            got = []
            channel.sink = lambda sdu: got.append(bytes(sdu).decode(errors='replace'))
            result['l2cap'] = {'peer_mtu': channel.peer_mtu, 'peer_mps': channel.peer_mps}
            for text in args.l2cap_send:
                channel.write(text.encode())
            await channel.drain()
            await asyncio.sleep(args.listen)
            result['l2cap']['received'] = got
            await channel.disconnect()
            await connection.disconnect()
            return result
        peer = Peer(connection)
        if args.record:
            received = result['received'] = []
            client = peer.gatt_client
            for kind in ('notification', 'indication'):
                original = getattr(client, f'on_att_handle_value_{kind}')

                def hook(pdu, kind=kind, original=original):
                    received.append({'kind': kind, 'handle': pdu.attribute_handle,
                                     'value': bytes(pdu.attribute_value).hex(), 't': round(time.monotonic() - started, 3)})
                    original(pdu)
                setattr(client, f'on_att_handle_value_{kind}', hook)
        if args.pair:
            # Pair first (Bumble's defaults: Secure Connections, bonding, no IO: Just Works).
            await asyncio.wait_for(connection.pair(), 30)
            result['paired'] = bool(connection.is_encrypted)
        elif args.encrypt:
            # A bond from an earlier run (--keystore): encrypt with its key, no pairing.
            await asyncio.wait_for(connection.encrypt(), 15)
            result['encrypted'] = bool(connection.is_encrypted)
            result['encrypted_at'] = round(time.monotonic() - started, 3)
        result['mtu'] = await peer.request_mtu(517)
        services = []
        chars = {}
        for service in await peer.discover_services():
            await service.discover_characteristics()
            entry = {'uuid': uuid_text(service.uuid), 'handle': service.handle,
                     'end_handle': service.end_group_handle, 'characteristics': []}
            for c in service.characteristics:
                await c.discover_descriptors()
                chars.setdefault(uuid_text(c.uuid), c)
                entry['characteristics'].append({
                    'uuid': uuid_text(c.uuid), 'handle': c.handle, 'properties': int(c.properties),
                    'descriptors': [uuid_text(d.type) for d in c.descriptors]})
            services.append(entry)
        result['services'] = services

        reads = {}
        for uuid, c in chars.items():
            if c.properties & 0x02:
                try:
                    reads[uuid] = bytes(await peer.read_value(c)).hex()
                except att.ATT_Error as e:
                    reads[uuid] = f'error 0x{e.error_code:02x}'
            for d in c.descriptors:
                if uuid_text(d.type) in ('2901', '2906', '2904'):
                    try:
                        reads[f'{uuid}/{uuid_text(d.type)}'] = bytes(await peer.read_value(d)).hex()
                    except att.ATT_Error as e:
                        reads[f'{uuid}/{uuid_text(d.type)}'] = f'error 0x{e.error_code:02x}'
        result['reads'] = reads

        async def run_writes(specs):
            done = []
            for spec in specs:
                uuid, _, value = spec.partition('=')
                with_response = True
                if uuid.endswith('!'):
                    uuid, with_response = uuid[:-1], False
                w = {'uuid': uuid, 'value': value, 'error': None}
                c = chars.get(uuid)
                if c is None:
                    w['error'] = 'no such characteristic'
                else:
                    try:
                        await peer.write_value(c, bytes.fromhex(value), with_response=with_response)
                        if with_response and c.properties & 0x02:
                            w['read_back'] = bytes(await peer.read_value(c)).hex()
                    except att.ATT_Error as e:
                        w['error'] = e.error_code
                done.append(w)
            return done

        result['writes'] = await run_writes(args.write)

        values = {}
        arrivals = []  # [uuid, hex] of every subscribed value, in the order they came
        result['arrivals'] = arrivals
        subscribed = []
        if args.subscribe_service_changed and '2A05' in chars:
            values['2A05'] = []
            await peer.subscribe(chars['2A05'], lambda v: values['2A05'].append(bytes(v).hex()), prefer_notify=False)
        refused = {}
        for uuid, c in chars.items():
            if args.no_subscribe or uuid == '2A05' or uuid in args.skip_subscribe or not c.properties & 0x30:
                continue
            values[uuid] = []

            def on_value(v, u=uuid):  # (not "received": --record's list has that name)
                values[u].append(bytes(v).hex())
                arrivals.append([u, bytes(v).hex()])
            try:
                await peer.subscribe(c, on_value, prefer_notify=bool(c.properties & 0x10))
            except att.ATT_Error as e:
                # The CCCD write refused (a protected value on a plain link): say which code.
                refused[uuid] = e.error_code
                continue
            subscribed.append(c)
        result['subscribe_errors'] = refused
        result['late_writes'] = await run_writes(args.write_after_subscribing)
        await asyncio.sleep(args.listen)
        if not args.keep_subscribed:
            for c in subscribed:
                await peer.unsubscribe(c)
        result['values'] = values
        await connection.disconnect()
    except (Exception, asyncio.CancelledError) as e:  # reported in the result line; the test fails on it
        # (CancelledError: a request whose link hcigatt dropped, as it does to an impostor.)
        result['error'] = f'{type(e).__name__}: {e}'
    return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--port', type=int, default=0)
    parser.add_argument('--host-address', default='C0:FF:EE:00:00:01')
    parser.add_argument('--centrals', type=int, default=1)
    parser.add_argument('--target', required=True, help='advertised name of the peripheral')
    parser.add_argument('--write', action='append', default=[], metavar='UUID[!]=HEX',
                        help='write HEX to the characteristic (! = without response)')
    parser.add_argument('--write-after-subscribing', action='append', default=[], metavar='UUID[!]=HEX',
                        help='like --write, once subscribed (a control point answering on what it subscribed)')
    parser.add_argument('--listen', type=float, default=3.0)
    parser.add_argument('--stagger', type=float, default=0.5,
                        help='seconds between the centrals starting (see run_central)')
    parser.add_argument('--scan-timeout', type=float, default=30.0)
    parser.add_argument('--pair', action='store_true', help='each central pairs before discovering')
    parser.add_argument('--extended-advertising', action='store_true',
                        help="hcigatt's controller claims the extended advertising commands (Bluetooth 5)")
    parser.add_argument('--keystore', default=None, metavar='FILE', help='keep the keys in FILE (JSON)')
    parser.add_argument('--encrypt', action='store_true', help='encrypt with the stored keys instead of pairing')
    parser.add_argument('--claim-identity', action='store_true',
                        help='connect from a private address of a new IRK of its own, distributing the public address as identity')
    parser.add_argument('--keep-subscribed', action='store_true', help='leave the CCCDs enabled')
    parser.add_argument('--no-subscribe', action='store_true', help='write no CCCD')
    parser.add_argument('--skip-subscribe', action='append', default=[], metavar='UUID',
                        help='do not subscribe to this characteristic (upper-case 16-bit UUID)')
    parser.add_argument('--subscribe-service-changed', action='store_true')
    parser.add_argument('--record', action='store_true', help='record every notification and indication')
    parser.add_argument('--l2cap', type=lambda v: int(v, 0), default=None, metavar='PSM',
                        help='open an LE credit-based channel to PSM instead of using GATT')
    parser.add_argument('--l2cap-send', action='append', default=[], metavar='TEXT', help='an SDU to send')
    parser.add_argument('--l2cap-mps', type=int, default=64)
    parser.add_argument('--l2cap-credits', type=int, default=2)
    parser.add_argument('--verbose', action='store_true')
    args = parser.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)

    link = PeerLink()
    server_socket, _, _ = await start_host_controller(link, args.port, args.host_address, False,
                                                      args.extended_advertising)
    devices = []
    for i in range(args.centrals):
        address = f'D0:D1:D2:D3:D4:{i + 1:02X}'
        controller = modern_link_layer(Controller(f'central{i}', link=link, public_address=address))
        device = Device(name=f'central{i}', address=hci.Address(address),
                        host=Host(controller, AsyncPipeSink(controller)))
        if args.keystore:
            device.keystore = JsonKeyStore(address, args.keystore)
        await device.power_on()
        devices.append(device)
    print(json.dumps({'ready': True, 'port': server_socket.getsockname()[1]}), flush=True)
    turns = [asyncio.Event() for _ in devices]
    results = await asyncio.gather(*(run_central(i, d, args, turns) for i, d in enumerate(devices)))
    for r in results:
        print(json.dumps(r), flush=True)
    # Keep the world up (hcigatt's controller with it) until told to stop, so hcigatt ends
    # on its own terms rather than seeing its controller vanish.
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()


if __name__ == '__main__':
    asyncio.run(main())
