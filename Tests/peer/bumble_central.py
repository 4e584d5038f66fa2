#!/usr/bin/env python3
"""A Bumble GATT client driving bumble_peer.py's TCP controller the way hcigatt does
(public own address, H4 over TCP): the reference for what a client should discover,
and a self-test of the peer.

  bumble_central.py --port N --peer ADDR[/random] discover      # JSON like --dump-own-db's services
  bumble_central.py --port N --peer ADDR selftest               # exercises the health database

Prints JSON on stdout; exit status 0 when every check passed.
"""
import argparse
import asyncio
import json
import logging
import struct
import sys

from bumble import att, hci
from bumble.device import Device
from bumble.gatt import GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR
from bumble.transport import open_transport

import gatt_db


def uuid_text(uuid) -> str:
    return uuid.to_hex_str('-')


async def discover(peer) -> list:
    """Every service, characteristic and descriptor, Bumble's client's view."""
    services = []
    for service in await peer.discover_services():
        await service.discover_characteristics()
        chars = []
        for c in service.characteristics:
            await c.discover_descriptors()
            # Bumble's client keeps no declaration handle; a declaration directly
            # precedes its value (Core Vol 3 Part G §3.3).
            chars.append({'handle': c.handle - 1,
                          'value_handle': c.handle, 'end_handle': c.end_group_handle,
                          'uuid': uuid_text(c.uuid), 'properties': int(c.properties),
                          'descriptors': [{'handle': d.handle, 'uuid': uuid_text(d.type)} for d in c.descriptors]})
        services.append({'handle': service.handle, 'end_handle': service.end_group_handle,
                         'uuid': uuid_text(service.uuid), 'characteristics': chars})
    return services


class Checks:
    def __init__(self):
        self.results = []

    def check(self, name, ok, detail=''):
        self.results.append({'check': name, 'ok': bool(ok), 'detail': detail})


async def selftest(peer, connection, checks: Checks):
    await discover(peer)
    chars = {}
    for service in peer.services:
        for c in service.characteristics:
            chars[uuid_text(c.uuid)] = c

    value = await peer.read_value(chars['2A29'])
    checks.check('read 2A29', value == b'hcigatt-test', value.hex())
    value = await peer.read_value(chars[gatt_db.LONG_VALUE_UUID])
    checks.check('long read 600 bytes', value == gatt_db.LONG_VALUE, f'{len(value)} bytes')

    long_write = bytes((i * 7) % 256 for i in range(300))
    await peer.write_value(chars[gatt_db.ECHO_UUID], long_write, with_response=True)
    value = await peer.read_value(chars[gatt_db.ECHO_UUID])
    checks.check('long write echo', value == long_write, f'{len(value)} bytes')
    await peer.write_value(chars[gatt_db.ECHO_UUID], b'no-response', with_response=False)
    await asyncio.sleep(0.2)
    value = await peer.read_value(chars[gatt_db.ECHO_UUID])
    checks.check('write without response echo', value == b'no-response', value.hex())

    try:
        await peer.read_value(chars[gatt_db.SECRET_UUID])
        checks.check('secret needs encryption', False, 'read succeeded')
    except att.ATT_Error as error:
        checks.check('secret needs encryption', error.error_code == att.ErrorCode.INSUFFICIENT_ENCRYPTION, str(error))

    try:
        await peer.write_value(chars['2A21'], struct.pack('<H', 61), with_response=True)
        checks.check('interval 61 rejected', False, 'write succeeded')
    except att.ATT_Error as error:
        checks.check('interval 61 rejected', error.error_code == 0xFF, str(error))
    await peer.write_value(chars['2A21'], struct.pack('<H', 5), with_response=True)
    value = await peer.read_value(chars['2A21'])
    checks.check('interval 5 accepted', value == struct.pack('<H', 5), value.hex())
    desc = chars['2A21'].get_descriptor('2906') if hasattr(chars['2A21'], 'get_descriptor') else None
    if desc is not None:
        value = await peer.read_value(desc)
        checks.check('valid range 1..60', value == struct.pack('<HH', 1, 60), value.hex())

    got = {'2A1C': [], '2A37': [], 'FFE1': []}
    for uuid in got:
        await peer.subscribe(chars[uuid], lambda v, uuid=uuid: got[uuid].append(bytes(v)),
                             prefer_notify=(uuid != '2A1C'))
    await asyncio.sleep(1.0)
    checks.check('indications 2A1C', len(got['2A1C']) >= 2 and got['2A1C'][0] == gatt_db.temperature_measurement(0),
                 [v.hex() for v in got['2A1C'][:2]])
    checks.check('notifications 2A37', len(got['2A37']) >= 2 and got['2A37'][0] == gatt_db.heart_rate_measurement(0),
                 [v.hex() for v in got['2A37'][:2]])
    checks.check('notifications FFE1', [v[0] for v in got['FFE1'][:4]] == [0, 1, 2, 3],
                 [v.hex() for v in got['FFE1'][:4]])
    for uuid in got:
        await peer.unsubscribe(chars[uuid])


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--peer', required=True, help='ADDR or ADDR/random')
    parser.add_argument('--address', default='C0:FF:EE:00:00:01')
    parser.add_argument('--verbose', action='store_true')
    parser.add_argument('command', choices=['discover', 'selftest'])
    args = parser.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)

    async with await open_transport(f'tcp-client:127.0.0.1:{args.port}') as (source, sink):
        device = Device.with_hci('central', hci.Address(args.address), source, sink)
        await device.power_on()
        address, _, kind = args.peer.partition('/')
        peer_address = hci.Address(address, hci.Address.RANDOM_DEVICE_ADDRESS if kind == 'random'
                                   else hci.Address.PUBLIC_DEVICE_ADDRESS)
        connection = await asyncio.wait_for(
            device.connect(peer_address, own_address_type=hci.OwnAddressType.PUBLIC), 10)
        from bumble.device import Peer
        peer = Peer(connection)
        await peer.request_mtu(517)
        if args.command == 'discover':
            print(json.dumps({'services': await discover(peer)}, indent=1))
            ok = True
        else:
            checks = Checks()
            await selftest(peer, connection, checks)
            print(json.dumps(checks.results, indent=1))
            ok = all(r['ok'] for r in checks.results)
        await connection.disconnect()
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    asyncio.run(main())
