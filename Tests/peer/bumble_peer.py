#!/usr/bin/env python3
"""A virtual Bluetooth LE world for hcigatt's tests, built on Google's Bumble.

Creates Bumble controllers on one simulated LocalLink:
  * one "host" controller served as an H4 byte stream on TCP for hcigatt to drive;
  * one controller per --peripheral, each driven in-process by a full Bumble host
    (Device) that advertises and serves GATT.

When everything is up, prints one JSON line to stdout: {"ready": true, "port": N, ...}.
Runs until killed. One hcigatt client per run: Bumble keeps controller state across
client reconnects, so tests start a fresh peer per case.

GATT peripherals (NAME,...,gatt=health) serve the database in gatt_db.py, send values to
subscribers every --notify-interval seconds, and report what happens as JSON event lines
on stdout after the ready line (see peer_events.py for the vocabulary). Fault injection:
--disconnect-after-connect S, --request-conn-params [MIN,MAX,LATENCY,TIMEOUT],
--ignore-att-after N, --disconnect-at-att N (also per peripheral: disconnect_after=S, conn_params[=...],
ignore_att_after=N). --dump-own-db FILE writes every peripheral's attribute table.

Bumble's LocalLink sends LE ACL data "from" the sender controller's random address,
which is 00:00:00:00:00:00 for a controller that connected or advertised with its
public address, so the receiver finds no connection and drops the data. PeerLink below
sends it from the address the sender's connection uses instead.
"""
import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import sys

from bumble import hci, ll, smp
from bumble.controller import Controller
from bumble.core import AdvertisingData, PhysicalTransport, UUID
from bumble.device import Device
from bumble.host import Host
from bumble.link import LocalLink
from bumble.keys import JsonKeyStore
from bumble.l2cap import LeCreditBasedChannelSpec
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport
from bumble.transport.common import AsyncPipeSink
from bumble.transport.tcp_server import open_tcp_server_transport_with_socket

from gatt_server import GattBehaviour, dump_database
import sensor_frames
from peer_events import EventWriter

# LE Supported Features bit 12: LE Extended Advertising (Core Vol 6 Part B §4.6).
LE_EXTENDED_ADVERTISING_BIT = 12


def modern_link_layer(controller):
    """251-byte payloads of up to 17040 µs both ways, suggested for every link: a Bluetooth
    5 controller's link layer (Bumble's default is Bluetooth 4.0's 27 bytes)."""
    controller.supported_max_tx_octets = controller.supported_max_rx_octets = 251
    controller.supported_max_tx_time = controller.supported_max_rx_time = 17040
    controller.suggested_max_tx_octets, controller.suggested_max_tx_time = 251, 17040
    return controller


def link_sizes(connection):
    """[tx octets, tx time, rx octets, rx time] in force on one end of a link (27 bytes,
    328 µs until a Data Length Update)."""
    return connection.__dict__.setdefault('link_sizes', [27, 328, 27, 328])


def data_length_change(handle, sizes):
    return hci.HCI_LE_Data_Length_Change_Event(connection_handle=handle, max_tx_octets=sizes[0], max_tx_time=sizes[1],
                                               max_rx_octets=sizes[2], max_rx_time=sizes[3])


def phys_of(controller):
    """The PHYs a controller takes (bit 0 1M, 1 2M, 2 Coded): its features, narrowed by its
    host's LE Set Default PHY where it gave one."""
    features = controller.le_features
    phys = 0x01 | (0x02 if features & hci.LeFeatureMask.LE_2M_PHY else 0) | (0x04 if features & hci.LeFeatureMask.LE_CODED_PHY else 0)
    default = getattr(controller, 'default_phy', {}) or {}
    chosen = (default.get('tx_phys', 0) | default.get('rx_phys', 0)) if not default.get('all_phys', 0) else 0
    return phys & chosen if phys & chosen else phys


def best_phy(mask):
    """2M, else 1M, else Coded (HCI PHY values 2, 1, 3); 1M when nothing is common."""
    for bit, value in ((0x02, 2), (0x01, 1), (0x04, 3)):
        if mask & bit:
            return value
    return 1


class HostController(Controller):
    """The controller hcigatt drives, with LE Create Connection Cancel as the spec has it.

    Bumble's cancel only answers success: its create stays pending (so every later create
    gets Command Disallowed) and no LE Connection Complete follows. Core Vol 4 Part E
    §7.8.13: the pending create ends and LE Connection Complete reports it with status
    Unknown Connection Identifier (0x02), after the Command Complete; with nothing pending
    the answer is Command Disallowed.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        modern_link_layer(self)
        # --max-links N: a controller with room for N links, which refuses another create
        # with Connection Limit Exceeded (0x09), as small real ones do.
        self.max_links = None

    def _full(self, command):
        if self.max_links is not None and len(self.le_connections) >= self.max_links:
            self._send_hci_command_status(hci.HCI_ErrorCode.CONNECTION_LIMIT_EXCEEDED_ERROR, command.op_code)
            return True
        return False

    def on_hci_le_create_connection_command(self, command):
        if self._full(command):
            return None
        return super().on_hci_le_create_connection_command(command)

    def on_hci_le_extended_create_connection_command(self, command):
        if self._full(command):
            return None
        return super().on_hci_le_extended_create_connection_command(command)

    def on_hci_le_create_connection_cancel_command(self, _command):
        pending = self.pending_le_connection
        if not pending:
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)
        self.pending_le_connection = None
        event = hci.HCI_LE_Connection_Complete_Event(
            status=hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, connection_handle=0,
            role=hci.Role.CENTRAL, peer_address_type=pending.peer_address_type,
            peer_address=pending.peer_address, connection_interval=0, peripheral_latency=0,
            supervision_timeout=0, central_clock_accuracy=0)
        # Runs after this handler's Command Complete has been sent.
        asyncio.get_running_loop().call_soon(self.send_hci_packet, event)
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)

    # Bumble's controller claims LE Data Packet Length Extension and LE 2M and Coded PHY,
    # but answers LE Set Data Length with Unknown HCI Command, never answers LE Set PHY,
    # and supports 27-byte payloads only. This one has a modern link layer (251 bytes,
    # 17040 µs, modern_link_layer) and runs both procedures as the spec has them, with the
    # peer's controller on the link: the effective sizes are the smaller of what each end
    # sends and the other takes (Core Vol 6 Part B §4.5.10), the PHY the best both take
    # (2M, then 1M, then Coded). Both hosts hear of a change; the asking host gets LE PHY
    # Update Complete also when nothing changes (Core Vol 4 Part E §7.8.49).

    # A controller that refuses both (--refuse-speed-ups): what hosts meet in older parts.
    refuse_speed_ups = False

    def on_hci_le_set_data_length_command(self, command):
        if self.refuse_speed_ups:
            return hci.HCI_StatusAndConnectionHandleReturnParameters(
                status=hci.HCI_ErrorCode.UNKNOWN_HCI_COMMAND_ERROR, connection_handle=command.connection_handle)
        connection = self.find_le_connection_by_handle(command.connection_handle)
        if connection is None:
            return hci.HCI_StatusAndConnectionHandleReturnParameters(
                status=hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, connection_handle=command.connection_handle)
        peer, peer_connection = self.peer_of(connection)
        mine = link_sizes(connection)
        tx = min(command.tx_octets, self.supported_max_tx_octets)
        tx_time = min(command.tx_time, self.supported_max_tx_time)
        if peer is not None and peer_connection is not None:
            theirs = link_sizes(peer_connection)
            # One LL_LENGTH_REQ / LL_LENGTH_RSP exchange: each end learns the other's maximum
            # to send (the peer's: its suggested default) and to take.
            new = [min(tx, peer.supported_max_rx_octets), min(tx_time, peer.supported_max_rx_time),
                   min(self.supported_max_rx_octets, peer.suggested_max_tx_octets),
                   min(self.supported_max_rx_time, peer.suggested_max_tx_time)]
            if new != mine:
                mine[:] = new
                theirs[:] = [new[2], new[3], new[0], new[1]]
                loop = asyncio.get_running_loop()
                loop.call_soon(self.send_hci_packet, data_length_change(connection.handle, mine))
                loop.call_soon(peer.send_hci_packet, data_length_change(peer_connection.handle, theirs))
        return hci.HCI_StatusAndConnectionHandleReturnParameters(
            status=hci.HCI_ErrorCode.SUCCESS, connection_handle=command.connection_handle)

    def on_hci_le_set_phy_command(self, command):
        if self.refuse_speed_ups:
            self._send_hci_command_status(hci.HCI_ErrorCode.UNSUPPORTED_FEATURE_OR_PARAMETER_VALUE_ERROR, command.op_code)
            return None
        connection = self.find_le_connection_by_handle(command.connection_handle)
        if connection is None:
            self._send_hci_command_status(hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, command.op_code)
            return None
        self._send_hci_command_status(hci.HCI_ErrorCode.SUCCESS, command.op_code)
        peer, peer_connection = self.peer_of(connection)
        ours, theirs = phys_of(self), phys_of(peer) if peer is not None else 0x01
        wanted_tx = ours if command.all_phys & 1 else command.tx_phys & ours
        wanted_rx = ours if command.all_phys & 2 else command.rx_phys & ours
        tx, rx = best_phy(wanted_tx & theirs), best_phy(wanted_rx & theirs)
        changed = connection.__dict__.get('phys', (1, 1)) != (tx, rx)
        connection.phys = (tx, rx)
        loop = asyncio.get_running_loop()
        loop.call_soon(self.send_hci_packet, hci.HCI_LE_PHY_Update_Complete_Event(
            status=hci.HCI_ErrorCode.SUCCESS, connection_handle=connection.handle, tx_phy=tx, rx_phy=rx))
        # The asking host hears also of no change (§7.8.49); the other only of a change.
        if changed and peer is not None and peer_connection is not None:
            peer_connection.phys = (rx, tx)
            loop.call_soon(peer.send_hci_packet, hci.HCI_LE_PHY_Update_Complete_Event(
                status=hci.HCI_ErrorCode.SUCCESS, connection_handle=peer_connection.handle, tx_phy=rx, rx_phy=tx))
        return None

    def peer_of(self, connection):
        """The controller at the other end of `connection`, and its connection to us."""
        peer = self.link.find_le_controller(connection.peer_address) if self.link else None
        if peer is None:
            return None, None
        return peer, peer.le_connections.get(connection.self_address)

    def on_hci_reset_command(self, command):
        """A reset ends the controller's LE links, as on real hardware (Core Vol 4 Part E
        §7.3.2; scanning and advertising state are left as Bumble keeps them). Bumble's
        reset changes nothing: its connections outlive the host that made them, and after a
        host closed without disconnecting (a user channel taken with --bring-down while the
        kernel's host held a link) this controller could never connect to that peer again
        ("connection already exists": no LE Connection Complete). The peer sees what a
        vanished controller causes, its supervision timeout (0x08); the host that sent the
        reset gets no Disconnection Complete."""
        self.pending_le_connection = None
        for connection in list(self.le_connections.values()):
            try:
                connection.send_ll_control_pdu(ll.TerminateInd(hci.HCI_ErrorCode.CONNECTION_TIMEOUT_ERROR))
            except Exception:  # the peer is gone already (its own terminate in flight)
                logging.getLogger(__name__).debug('reset: no peer for %s', connection.peer_address)
            del self.le_connections[connection.peer_address]
        return super().on_hci_reset_command(command)


class PeerLink(LocalLink):
    """LocalLink with LE ACL data sent from the address of the sender's connection."""

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        if transport == PhysicalTransport.LE:
            connection = sender_controller.le_connections.get(destination_address)
            destination = self.find_le_controller(destination_address)
            if connection is not None and destination is not None:
                source = connection.self_address
                asyncio.get_running_loop().call_soon(
                    lambda: destination.on_link_acl_data(source, transport, data))
                return
        super().send_acl_data(sender_controller, destination_address, transport, data)


# Bumble's controller handles the extended advertising commands but does not claim them in
# Supported_Commands; claimed, it behaves as a Bluetooth 5 controller with advertising sets.
EXTENDED_ADVERTISING_COMMANDS = {
    hci.HCI_LE_SET_ADVERTISING_SET_RANDOM_ADDRESS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_ADVERTISING_PARAMETERS_COMMAND,
    hci.HCI_LE_SET_EXTENDED_ADVERTISING_DATA_COMMAND,
    hci.HCI_LE_SET_EXTENDED_SCAN_RESPONSE_DATA_COMMAND,
    hci.HCI_LE_SET_EXTENDED_ADVERTISING_ENABLE_COMMAND,
    hci.HCI_LE_READ_MAXIMUM_ADVERTISING_DATA_LENGTH_COMMAND,
    hci.HCI_LE_READ_NUMBER_OF_SUPPORTED_ADVERTISING_SETS_COMMAND,
    hci.HCI_LE_REMOVE_ADVERTISING_SET_COMMAND,
    hci.HCI_LE_CLEAR_ADVERTISING_SETS_COMMAND,
}


async def start_host_controller(link, port, address, legacy_reports, extended_advertising=False, nodelay=True):
    """A HostController on `link` served as H4 on a TCP socket bound to 127.0.0.1:port
    (0: any). Returns (socket, transport, controller)."""
    # nodelay: IPPROTO_TCP named, as asyncio sets TCP_NODELAY only on sockets whose proto
    # says TCP (accepted ones inherit it); with 0, Nagle holds small H4 packets back ~40 ms
    # each, a pace no UART or USB controller has.
    server_socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP if nodelay else 0)
    server_socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server_socket.bind(('127.0.0.1', port))
    transport = await open_tcp_server_transport_with_socket(server_socket)
    controller = HostController('hcigatt', host_source=transport.source, host_sink=transport.sink,
                                link=link, public_address=address)
    if legacy_reports:
        controller.le_features = hci.LeFeatureMask(
            controller.le_features.value & ~(1 << LE_EXTENDED_ADVERTISING_BIT))
    if extended_advertising:
        controller.supported_commands = set(controller.supported_commands) | EXTENDED_ADVERTISING_COMMANDS
    return server_socket, transport, controller


def parse_conn_params(value: str) -> tuple:
    """MIN,MAX,LATENCY,TIMEOUT in Core units (1.25 ms, 1.25 ms, events, 10 ms)."""
    try:
        numbers = tuple(int(v, 0) for v in value.split(','))
    except ValueError:
        numbers = ()
    if len(numbers) != 4:
        raise SystemExit(f'bumble_peer: connection parameters are MIN,MAX,LATENCY,TIMEOUT, not {value!r}')
    return numbers


DEFAULT_CONN_PARAMS = '24,40,0,200'

PAIRING_MODES = ('jw', 'legacy', 'passkey', 'legacy-passkey', 'nc', 'refuse', 'reflect', 'reflect-y', 'disorder')
# Hostile pairing: Secure Connections Just Works from a peripheral whose SMP misbehaves.
HOSTILE_PAIRING = ('reflect', 'reflect-y', 'disorder')
# The P-256 field prime (SEC 2): (x, p - y) is the point (x, y) mirrored, on the curve too.
P256_P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF


class HostileSession(smp.Session):
    """A peripheral's SMP session that attacks as `mode` says: reflect (the central's own
    public key sent back as ours, CVE-2020-26558's reflection), reflect-y (its x with p - y,
    which passes a check that compares whole points), disorder (a DHKey Check where our
    Pairing Confirm belongs)."""
    mode = None

    def send_public_key_command(self):
        if self.mode in ('reflect', 'reflect-y'):
            y = self.peer_public_key_y
            if self.mode == 'reflect-y':
                y = (P256_P - int.from_bytes(y, 'little')).to_bytes(32, 'little')
            self.send_command(smp.SMP_Pairing_Public_Key_Command(public_key_x=self.peer_public_key_x, public_key_y=y))
            return
        super().send_public_key_command()

    def send_pairing_confirm_command(self):
        if self.mode == 'disorder':
            self.send_command(smp.SMP_Pairing_DHKey_Check_Command(dhkey_check=bytes(16)))
            return
        super().send_pairing_confirm_command()
PASSKEY = 123456
# The IRK of peripherals with privacy (Core Vol 3 Part H Appendix D.7's ah example key).
PRIVACY_IRK = "ec0234a357c8ad05341010a60a397d9b"


class PeerPairingDelegate(PairingDelegate):
    """Answers for a user: a fixed passkey shown, numbers confirmed, or every pairing refused."""

    def __init__(self, mode):
        io = {
            'passkey': PairingDelegate.DISPLAY_OUTPUT_ONLY,
            'legacy-passkey': PairingDelegate.DISPLAY_OUTPUT_ONLY,
            'nc': PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
        }.get(mode, PairingDelegate.NO_OUTPUT_NO_INPUT)
        super().__init__(io_capability=io)
        self.mode = mode

    async def accept(self):
        return self.mode != 'refuse'

    async def confirm(self, auto=False):
        return self.mode != 'refuse'

    async def compare_numbers(self, number, digits):
        return True

    async def generate_passkey(self):
        return PASSKEY

    async def display_number(self, number, digits):
        pass


def pairing_config(mode):
    """A Bumble PairingConfig for one of PAIRING_MODES."""
    return PairingConfig(sc=mode not in ('legacy', 'legacy-passkey'),
                         mitm=mode in ('passkey', 'legacy-passkey', 'nc'), bonding=True,
                         delegate=PeerPairingDelegate(mode))


def parse_peripheral(spec: str, index: int) -> dict:
    """NAME[,service=UUID]...[,address=AA:..][,mfr=CCCC:HEX][,txpower=N][,random]
    [,gatt=health|uart|glucose[-MODE]][,disconnect_after=S][,conn_params[=MIN:MAX:LATENCY:TIMEOUT]]
    [,ignore_att_after=N][,pairing=MODE][,privacy[=IRK]][,keystore=FILE]
    [,l2cap=PSM[:MTU:MPS:CREDITS]][,l2cap_close_after=S][,l2cap_stingy]
    [,sensor=bthome|bthome-enc|ruuvi|pvvx|ibeacon|eddystone][,sensor_interval=S][,sensor_count=N]
    [,silent_after=S]

    sensor: broadcast a new sensor reading every sensor_interval seconds (default 0.5),
    numbered 1, 2 ... (sensor_frames.py), up to sensor_count readings (default: no end);
    each is reported as a 'sensor-reading' event. A beacon (ibeacon, eddystone) sends no
    name: its frame fills the 31 bytes.
    silent_after: stop advertising S seconds after starting (a device leaving), reported
    as a 'silent' event.

    keystore: keep the bonds in FILE (JSON), so a later run still knows its centrals.
    l2cap: an LE credit-based channel server on PSM (MTU, MPS, credits: what it takes; a
    small credit count makes it give credits slowly, one window at a time) that echoes
    every SDU back and reports it ('l2cap-open', 'l2cap-sdu', 'l2cap-closed' events);
    l2cap_close_after: it disconnects each channel S seconds after it opened;
    l2cap_stingy: it never gives credits beyond the initial ones.

    privacy: advertise from a resolvable private address made with IRK (32 hex digits;
    a fixed default), a fresh one each run, and distribute the IRK when pairing; the
    address given stays the identity (public).
    pairing: jw (the default: Secure Connections, Just Works), legacy (LE legacy Just
    Works), passkey (SC, it displays 123456), legacy-passkey (the same, legacy), nc
    (Numeric Comparison, it says yes), refuse (every pairing refused); hostile ones
    (HostileSession): reflect, reflect-y, disorder."""
    parts = spec.split(',')
    p = {
        'name': parts[0],
        'services': [],
        'address': f'F0:F1:F2:F3:F4:{index + 1:02X}',
        'mfr': None,
        'tx_power': None,
        'random': False,
        'gatt': None,
        'disconnect_after': None,
        'conn_params': None,
        'ignore_att_after': None,
        'pairing': None,
        'privacy': None,
        'keystore': None,
        'l2cap': None,
        'l2cap_close_after': None,
        'l2cap_stingy': False,
        'sensor': None,
        'sensor_interval': 0.5,
        'sensor_count': None,
        'silent_after': None,
    }
    for part in parts[1:]:
        key, _, value = part.partition('=')
        if key == 'service':
            p['services'].append(value)
        elif key == 'address':
            p['address'] = value
        elif key == 'mfr':
            company, _, data = value.partition(':')
            p['mfr'] = (int(company, 16), bytes.fromhex(data))
        elif key == 'txpower':
            p['tx_power'] = int(value)
        elif key == 'random':
            p['random'] = True
        elif key == 'gatt':
            p['gatt'] = value
        elif key == 'disconnect_after':
            p['disconnect_after'] = float(value)
        elif key == 'conn_params':
            p['conn_params'] = parse_conn_params(value.replace(':', ',') or DEFAULT_CONN_PARAMS)
        elif key == 'ignore_att_after':
            p['ignore_att_after'] = int(value)
        elif key == 'pairing':
            if value not in PAIRING_MODES:
                raise SystemExit(f'bumble_peer: pairing is one of {", ".join(PAIRING_MODES)}, not {value!r}')
            p['pairing'] = value
        elif key == 'keystore':
            p['keystore'] = value
        elif key == 'l2cap':
            parts_ = [int(x, 0) for x in value.split(':')]
            p['l2cap'] = parts_ + [None] * (4 - len(parts_))
        elif key == 'l2cap_close_after':
            p['l2cap_close_after'] = float(value)
        elif key == 'l2cap_stingy':
            p['l2cap_stingy'] = True
        elif key == 'sensor':
            if value not in sensor_frames.KINDS:
                raise SystemExit(f'bumble_peer: sensor is one of {", ".join(sensor_frames.KINDS)}, not {value!r}')
            p['sensor'] = value
        elif key == 'sensor_interval':
            p['sensor_interval'] = float(value)
        elif key == 'sensor_count':
            p['sensor_count'] = int(value)
        elif key == 'silent_after':
            p['silent_after'] = float(value)
        elif key == 'privacy':
            p['privacy'] = bytes.fromhex(value or PRIVACY_IRK)
            if len(p['privacy']) != 16:
                raise SystemExit(f'bumble_peer: privacy=IRK takes 32 hex digits, not {value!r}')
        else:
            raise SystemExit(f'bumble_peer: unknown peripheral option {key!r} in {spec!r}')
    return p


def advertising_data(p: dict, reading: int = 0) -> bytes:
    # (Bumble's controller answers scan requests by repeating the advertising data, so
    # there is no point in giving peripherals scan response data of their own.)
    structures = [(AdvertisingData.FLAGS, bytes([0x06]))]
    if p['sensor'] not in sensor_frames.BEACONS:
        structures.append((AdvertisingData.COMPLETE_LOCAL_NAME, p['name'].encode()))
    uuids16 = [UUID(s) for s in p['services'] if len(s) == 4]
    if uuids16:
        structures.append(
            (AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS,
             b''.join(bytes(u) for u in uuids16)))
    if p['tx_power'] is not None:
        structures.append((AdvertisingData.TX_POWER_LEVEL, bytes([p['tx_power'] & 0xFF])))
    if p['mfr'] is not None:
        company, data = p['mfr']
        structures.append(
            (AdvertisingData.MANUFACTURER_SPECIFIC_DATA, company.to_bytes(2, 'little') + data))
    if p['sensor'] is not None and reading > 0:
        structures.append(sensor_frames.structure(p['sensor'], reading, p['address']))
    return bytes(AdvertisingData(structures))


async def broadcast_readings(device, p, events, own):
    """A new sensor reading in the advertising data every sensor_interval seconds."""
    n = 0
    while (p['sensor_count'] is None or n < p['sensor_count']) and not p.get('silent'):
        n += 1
        await device.stop_advertising()
        device.advertising_data = advertising_data(p, n)
        await device.start_advertising(auto_restart=True, own_address_type=own)
        if p.get('silent'):  # went silent while this restarted it
            await device.stop_advertising()
            break
        events('sensor-reading', {'name': p['name'], 'n': n})
        await asyncio.sleep(p['sensor_interval'])


async def start_peripheral(link, index, p, events, *, database, **behaviour_options):
    """A Bumble controller on `link` driven by a Device that serves GATT (GattBehaviour)
    and advertises as parse_peripheral's `p` says. Returns (device, behaviour)."""
    controller = modern_link_layer(Controller(f'peripheral{index}', link=link, public_address=p['address']))
    device = Device(name=p['name'], address=hci.Address(p['address']),
                    host=Host(controller, AsyncPipeSink(controller)))
    device.advertising_data = advertising_data(p)
    if p.get('pairing'):
        mode = p['pairing']
        device.pairing_config_factory = lambda connection: pairing_config(mode)
        if mode in HOSTILE_PAIRING:
            device.smp_session_proxy = type('HostileSession', (HostileSession,), {'mode': mode})
    if p['keystore']:
        device.keystore = JsonKeyStore(p['address'], p['keystore'])
    if p['privacy'] is not None:
        device.le_privacy_enabled = True
        device.le_rpa_timeout = 0  # one RPA per run: the tests restart the peer for a new one
        device.irk = p['privacy']
    behaviour = GattBehaviour(device, p['name'], events, database=database, **behaviour_options)
    if p['l2cap'] is not None:
        start_l2cap_server(device, p, events)
    await device.power_on()
    if p['privacy'] is not None:
        p['rpa'] = str(device.random_address).split('/')[0]
    # Public addresses unless asked otherwise: the address given is then what scanners see.
    own = hci.OwnAddressType.RANDOM if p['random'] or p['privacy'] is not None else hci.OwnAddressType.PUBLIC
    await device.start_advertising(auto_restart=True, own_address_type=own)
    if p['sensor'] is not None:
        asyncio.get_running_loop().create_task(broadcast_readings(device, p, events, own))
    if p['silent_after'] is not None:
        asyncio.get_running_loop().create_task(go_silent(device, p, events))
    return device, behaviour


async def go_silent(device, p, events):
    """Stops advertising after silent_after seconds, for good (a device leaving)."""
    await asyncio.sleep(p['silent_after'])
    p['silent'] = True
    await device.stop_advertising()
    events('silent', {'name': p['name']})


def start_l2cap_server(device, p, events):
    """An LE credit-based channel server that echoes every SDU (see parse_peripheral)."""
    psm, mtu, mps, credits = p['l2cap']
    spec = LeCreditBasedChannelSpec(psm=psm, mtu=mtu or 2048, mps=mps or 248, max_credits=credits or 8)

    def on_channel(channel):
        events('l2cap-open', {'psm': psm, 'peer_mtu': channel.peer_mtu, 'peer_mps': channel.peer_mps,
                              'credits': channel.credits})

        def on_sdu(sdu):
            events('l2cap-sdu', {'length': len(sdu), 'hex': bytes(sdu[:32]).hex(), 'sum': sum(sdu) & 0xFFFFFFFF})
            channel.write(bytes(sdu))

        channel.sink = on_sdu
        if p['l2cap_stingy']:
            channel.peer_credits_threshold = -1  # never below it: no credits are given back
        channel.on('close', lambda: events('l2cap-closed', {'psm': psm}))
        if p['l2cap_close_after'] is not None:
            async def close_later():
                await asyncio.sleep(p['l2cap_close_after'])
                await channel.disconnect()
            asyncio.get_running_loop().create_task(close_later())

    device.create_l2cap_server(spec=spec, handler=on_channel)


def peripheral_info(p: dict, database) -> dict:
    """What the ready line says about a peripheral."""
    if p['privacy'] is not None:
        # Scanners see the RPA; pairing gives them the identity (the public address).
        return {'name': p['name'], 'address': p['rpa'], 'address_type': 'random',
                'identity': p['address'], 'gatt': database}
    return {'name': p['name'], 'address': p['address'],
            'address_type': 'random' if p['random'] else 'public',
            'gatt': database}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--port', type=int, default=0, help='TCP port for hcigatt (0: pick one)')
    parser.add_argument('--host-address', default='C0:FF:EE:00:00:01',
                        help='public address of the controller hcigatt drives')
    parser.add_argument('--peripheral', action='append', default=[],
                        help='NAME[,service=UUID]...[,address=ADDR][,mfr=CCCC:HEX][,txpower=N][,random]'
                             '[,gatt=health|uart|glucose[-MODE]][,disconnect_after=S][,conn_params[=MIN:MAX:LAT:TO]]'
                             '[,ignore_att_after=N][,pairing=MODE]')
    parser.add_argument('--hosts', type=int, default=1,
                        help='TCP controllers for hcigatt (the ready line lists their ports; the '
                             'n-th has --host-address + n)')
    parser.add_argument('--extended-advertising', action='store_true',
                        help="hcigatt's controllers claim the extended advertising commands (Bluetooth 5)")
    parser.add_argument('--refuse-speed-ups', action='store_true',
                        help='the controller hcigatt drives refuses LE Set Data Length (Unknown HCI Command) '
                             'and LE Set PHY (Unsupported Feature)')
    parser.add_argument('--legacy-reports', action='store_true',
                        help='clear the LE Extended Advertising feature bit so the controller '
                             'sends legacy LE Advertising Reports')
    parser.add_argument('--close-after', type=float, default=None,
                        help='close the TCP connection to hcigatt this many seconds after it connects')
    parser.add_argument('--gatt', default=None, metavar='DB',
                        help='serve this GATT database (health) on every peripheral without gatt=')
    parser.add_argument('--notify-interval', type=float, default=0.2,
                        help='seconds between values sent to each subscribed characteristic')
    parser.add_argument('--disconnect-after-connect', type=float, default=None, metavar='S',
                        help='GATT peripherals drop each link S seconds after it connects')
    parser.add_argument('--request-conn-params', nargs='?', const=DEFAULT_CONN_PARAMS, default=None,
                        metavar='MIN,MAX,LATENCY,TIMEOUT',
                        help='GATT peripherals send an L2CAP Connection Parameter Update Request '
                             f'after connecting (Core units; default {DEFAULT_CONN_PARAMS})')
    parser.add_argument('--conn-params-delay', type=float, default=0.1,
                        help='seconds after connecting before that request')
    parser.add_argument('--ignore-att-after', type=int, default=None, metavar='N',
                        help='GATT peripherals answer the first N ATT requests, then none')
    parser.add_argument('--disconnect-at-att', type=int, default=None, metavar='N',
                        help='GATT peripherals drop the link when their Nth ATT request comes '
                             '(unanswered): a disconnection mid-procedure, whatever the pace')
    parser.add_argument('--malform-att', type=int, default=None, metavar='N',
                        help='GATT peripherals answer their Nth ATT request with a malformed '
                             '(truncated) Error Response')
    parser.add_argument('--log-att', action='store_true',
                        help='an "att" event for every ATT PDU a peripheral receives')
    parser.add_argument('--dump-own-db', default=None, metavar='FILE',
                        help="write each peripheral's attribute table as JSON before the ready line")
    parser.add_argument('--max-links', type=int, default=None, metavar='N',
                        help="the first controller takes N links at most (Connection Limit Exceeded after)")
    parser.add_argument('--verbose', action='store_true')
    args = parser.parse_args()
    conn_params = parse_conn_params(args.request_conn_params) if args.request_conn_params else None
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)

    link = PeerLink()
    events = EventWriter(sys.stdout)

    # The controllers hcigatt drives, on TCP server sockets we bind first so the ports are known.
    server_socket, transport, controller = await start_host_controller(link, args.port, args.host_address, args.legacy_reports,
                                                              args.extended_advertising)
    controller.refuse_speed_ups = args.refuse_speed_ups
    controller.max_links = args.max_links
    port = server_socket.getsockname()[1]
    extra_ports = []
    for n in range(1, args.hosts):
        address = args.host_address[:-2] + f'{int(args.host_address[-2:], 16) + n:02X}'
        extra_socket, _, _ = await start_host_controller(link, 0, address, args.legacy_reports, args.extended_advertising)
        extra_ports.append(extra_socket.getsockname()[1])

    devices = []
    dumps = []
    behaviours = []
    for index, spec in enumerate(args.peripheral):
        p = parse_peripheral(spec, index)
        database = p['gatt'] or args.gatt
        device, behaviour = await start_peripheral(
            link, index, p, events,
            database=database,
            notify_interval=args.notify_interval,
            disconnect_after=p['disconnect_after'] if p['disconnect_after'] is not None
            else args.disconnect_after_connect,
            conn_params=p['conn_params'] or conn_params,
            conn_params_delay=args.conn_params_delay,
            ignore_att_after=p['ignore_att_after'] if p['ignore_att_after'] is not None
            else args.ignore_att_after,
            malform_att=args.malform_att,
            disconnect_at_att=args.disconnect_at_att,
            log_att=args.log_att)
        behaviours.append(behaviour)
        devices.append(peripheral_info(p, database))
        dumps.append(dump_database(device, p['name'], p['address']))

    if args.dump_own_db is not None:
        with open(args.dump_own_db, 'w') as f:
            json.dump({'peripherals': dumps}, f, indent=1)

    print(json.dumps({'ready': True, 'port': port, 'ports': [port] + extra_ports, 'peripherals': devices}), flush=True)
    events.start(asyncio.get_running_loop())

    if args.close_after is not None:
        async def closer():
            # Wait for hcigatt to connect (the sink learns its transport then), give it
            # close_after seconds, then drop the connection under it.
            while transport.sink.transport is None:
                await asyncio.sleep(0.05)
            await asyncio.sleep(args.close_after)
            t = transport.sink.transport
            if t is not None:
                t.close()
            server_socket.close()
            transport.server.close()
        asyncio.get_running_loop().create_task(closer())

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


if __name__ == '__main__':
    asyncio.run(main())
