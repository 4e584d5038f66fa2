"""What a test peripheral does once connected: serve its GATT database, send values to
subscribers, report events, and inject the faults the options ask for."""
import asyncio
import logging

from bumble import att, hci
from bumble.gatt import (GATT_CHARACTERISTIC_ATTRIBUTE_TYPE, GATT_INCLUDE_ATTRIBUTE_TYPE,
                         GATT_PRIMARY_SERVICE_ATTRIBUTE_TYPE, GATT_SECONDARY_SERVICE_ATTRIBUTE_TYPE,
                         Characteristic, CharacteristicDeclaration, Service)

from gatt_db import DATABASES

logger = logging.getLogger('bumble_peer')

# How long the peer waits for the central's L2CAP Connection Parameter Update Response
# (Core Vol 3 Part A §4: the signaling RTX timer is 1 to 60 s).
CONN_PARAMS_RESPONSE_TIMEOUT = 10.0


def uuid_text(uuid) -> str:
    """'2A1C' for 16-bit UUIDs, the dashed upper-case form for 128-bit ones."""
    return uuid.to_hex_str('-')


def reason_name(reason: int) -> str:
    try:
        return hci.HCI_ErrorCode(reason).name
    except ValueError:
        return f'0x{reason:02X}'


def opcode_name(opcode: int) -> str:
    try:
        return att.Opcode(opcode).name
    except ValueError:
        return f'0x{opcode:02X}'


class GattBehaviour:
    def __init__(self, device, name, events, *, database, notify_interval, disconnect_after,
                 conn_params, conn_params_delay, ignore_att_after, log_att, malform_att=None,
                 disconnect_at_att=None):
        self.device = device
        self.name = name
        self.emit_raw = events
        self.notify_interval = notify_interval
        self.disconnect_after = disconnect_after
        self.conn_params = conn_params
        self.conn_params_delay = conn_params_delay
        self.ignore_att_after = ignore_att_after
        self.malform_att = malform_att
        self.disconnect_at_att = disconnect_at_att
        self.log_att = log_att
        self.att_requests = 0
        # (connection handle, value handle) -> the task sending values.
        self.senders = {}
        self.db = None
        if database is not None:
            factory = DATABASES.get(database)
            if factory is None:
                raise SystemExit(f'bumble_peer: unknown GATT database {database!r} (known: {", ".join(DATABASES)})')
            self.db = factory(self.emit)
            self.db.interval_listener = self.on_interval_changed
            if hasattr(self.db, 'echo_listener'):
                self.db.echo_listener = self.on_echo
            if hasattr(self.db, 'sender'):
                self.db.sender = self.send_value
            if hasattr(self.db, 'flooder'):
                # A notification with no event per value: the flooding modes send thousands.
                self.db.flooder = lambda connection, characteristic, data: device.notify_subscriber(
                    connection, characteristic, data)
            device.add_services(self.db.services)
            self.periodic = {c.handle: (c, indicate, value) for c, indicate, value in self.db.periodic()}
        else:
            self.periodic = {}
        self.watch_writes()
        self.hook_att()
        device.on(device.EVENT_CONNECTION, self.on_connection)
        device.on('characteristic_subscription', self.on_subscription)

    def emit(self, event, fields):
        record = {'peripheral': self.name}
        record.update(fields)
        self.emit_raw(event, record)

    # -- events ---------------------------------------------------------------------

    def watch_writes(self):
        """A "written" event for every accepted write to any attribute."""
        for attribute in self.device.gatt_server.attributes:
            def on_write(connection, value, attribute=attribute):
                data = value if isinstance(value, (bytes, bytearray)) else bytes(value)
                self.emit('written', {'connection': getattr(connection, 'handle', None),
                                      'handle': attribute.handle, 'uuid': uuid_text(attribute.type),
                                      'value': bytes(data).hex()})
            attribute.on(attribute.EVENT_WRITE, on_write)

    def hook_att(self):
        """Wraps the GATT server's PDU entry point: --log-att and --ignore-att-after.
        (Bumble's Device hands every client ATT PDU to gatt_server.on_gatt_pdu; an
        instance attribute shadows the method.)"""
        server = self.device.gatt_server
        original = server.on_gatt_pdu

        def on_gatt_pdu(bearer, pdu):
            handle = getattr(bearer, 'handle', None)
            if self.log_att:
                self.emit('att', {'connection': handle, 'opcode': pdu.op_code, 'name': opcode_name(pdu.op_code)})
            if pdu.op_code in att.ATT_REQUESTS:
                self.att_requests += 1
                if self.ignore_att_after is not None and self.att_requests > self.ignore_att_after:
                    self.emit('att-ignored', {'connection': handle, 'opcode': pdu.op_code,
                                              'name': opcode_name(pdu.op_code), 'count': self.att_requests})
                    return
                if self.disconnect_at_att is not None and self.att_requests == self.disconnect_at_att:
                    connection = self.device.lookup_connection(handle) if handle is not None else None
                    if connection is not None:
                        self.emit('disconnecting', {'connection': handle, 'at_att_request': self.att_requests,
                                                    'name': opcode_name(pdu.op_code)})
                        asyncio.get_running_loop().create_task(self.disconnect_now(connection))
                        return
                if self.malform_att is not None and self.att_requests == self.malform_att:
                    # An Error Response cut short (3 bytes instead of 5): malformed on purpose.
                    server.send_gatt_pdu(bearer, bytes([0x01, pdu.op_code, 0x00]))
                    self.emit('att-malformed', {'connection': handle, 'opcode': pdu.op_code,
                                                'name': opcode_name(pdu.op_code), 'count': self.att_requests})
                    return
            original(bearer, pdu)

        server.on_gatt_pdu = on_gatt_pdu

    def on_connection(self, connection):
        p = connection.parameters
        self.emit('connected', {
            'peer': str(connection.peer_address).split('/')[0],
            'peer_type': 'random' if connection.peer_address.is_random else 'public',
            'connection': connection.handle,
            'interval_ms': p.connection_interval, 'latency': p.peripheral_latency,
            'supervision_timeout_ms': p.supervision_timeout})

        def on_disconnection(reason):
            for key in [k for k in self.senders if k[0] == connection.handle]:
                self.senders.pop(key).cancel()
            self.emit('disconnected', {'peer': str(connection.peer_address).split('/')[0],
                                       'connection': connection.handle, 'reason': reason,
                                       'reason_name': reason_name(reason)})

        def on_mtu():
            self.emit('mtu', {'connection': connection.handle, 'mtu': connection.att_mtu})

        def on_pairing(keys):
            self.emit('paired', {'connection': connection.handle,
                                 'encrypted': bool(connection.is_encrypted),
                                 'authenticated': bool(connection.authenticated),
                                 'ltk': keys.ltk is not None or keys.ltk_peripheral is not None,
                                 'irk': keys.irk is not None, 'csrk': keys.csrk is not None})

        def on_pairing_failure(reason):
            self.emit('pairing-failed', {'connection': connection.handle, 'reason': int(reason)})

        def on_encryption_change():
            self.emit('encryption', {'connection': connection.handle,
                                     'encrypted': bool(connection.is_encrypted)})

        connection.on('pairing', on_pairing)
        connection.on('pairing_failure', on_pairing_failure)
        connection.on('connection_encryption_change', on_encryption_change)

        def on_parameters():
            q = connection.parameters
            self.emit('conn-params-updated', {'connection': connection.handle,
                                              'interval_ms': q.connection_interval,
                                              'latency': q.peripheral_latency,
                                              'supervision_timeout_ms': q.supervision_timeout})

        connection.on(connection.EVENT_DISCONNECTION, on_disconnection)
        connection.on(connection.EVENT_CONNECTION_ATT_MTU_UPDATE, on_mtu)
        connection.on(connection.EVENT_CONNECTION_PARAMETERS_UPDATE, on_parameters)

        loop = asyncio.get_running_loop()
        if self.disconnect_after is not None:
            loop.create_task(self.disconnect_later(connection, self.disconnect_after))
        if self.conn_params is not None:
            loop.create_task(self.request_conn_params(connection))

    # -- fault injection ------------------------------------------------------------

    async def disconnect_now(self, connection):
        try:
            await connection.disconnect(hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR)
        except Exception as error:  # the link may already be gone
            logger.warning('disconnect failed: %s', error)

    async def disconnect_later(self, connection, seconds):
        await asyncio.sleep(seconds)
        if connection.handle not in self.device.connections:
            return
        self.emit('disconnecting', {'connection': connection.handle, 'after': seconds})
        try:
            await connection.disconnect(hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR)
        except Exception as error:  # the link may already be gone
            logger.warning('disconnect failed: %s', error)

    async def request_conn_params(self, connection):
        """L2CAP Connection Parameter Update Request (Core Vol 3 Part A §4.20), sent as
        the peripheral, and the central's result."""
        await asyncio.sleep(self.conn_params_delay)
        if connection.handle not in self.device.connections:
            return
        interval_min, interval_max, latency, timeout = self.conn_params
        self.emit('conn-params-requested', {'connection': connection.handle,
                                            'interval_min': interval_min, 'interval_max': interval_max,
                                            'latency': latency, 'timeout': timeout})
        manager = self.device.l2cap_channel_manager
        try:
            result = await asyncio.wait_for(
                connection.cancel_on_disconnection(manager.update_connection_parameters(
                    connection, interval_min, interval_max, latency, timeout)),
                CONN_PARAMS_RESPONSE_TIMEOUT)
        except asyncio.TimeoutError:
            manager.connection_parameters_update_response = None
            self.emit('conn-params-result', {'connection': connection.handle, 'error': 'timeout', 'accepted': False})
            return
        except Exception as error:
            manager.connection_parameters_update_response = None
            self.emit('conn-params-result', {'connection': connection.handle,
                                             'error': 'disconnected' if connection.handle not in self.device.connections
                                             else str(error), 'accepted': False})
            return
        self.emit('conn-params-result', {'connection': connection.handle, 'result': result, 'accepted': result == 0})

    # -- subscriptions --------------------------------------------------------------

    def on_subscription(self, connection, characteristic, notify_enabled, indicate_enabled):
        handle = getattr(connection, 'handle', None)
        self.emit('subscribed', {'connection': handle, 'handle': characteristic.handle,
                                 'uuid': uuid_text(characteristic.type),
                                 'notify': notify_enabled, 'indicate': indicate_enabled})
        key = (handle, characteristic.handle)
        task = self.senders.pop(key, None)
        if task is not None:
            task.cancel()
        entry = self.periodic.get(characteristic.handle)
        if entry is None:
            return
        _, indicate, value = entry
        if (indicate and indicate_enabled) or (not indicate and notify_enabled):
            self.senders[key] = asyncio.get_running_loop().create_task(
                self.send_periodically(connection, characteristic, indicate, value))

    async def send_periodically(self, connection, characteristic, indicate, value):
        sequence = 0
        while True:
            await self.send_value(connection, characteristic, indicate, value(sequence), sequence)
            sequence += 1
            await asyncio.sleep(self.notify_interval)

    async def send_value(self, connection, characteristic, indicate, data, sequence):
        fields = {'connection': connection.handle, 'handle': characteristic.handle,
                  'uuid': uuid_text(characteristic.type), 'sequence': sequence}
        # Bumble returns quietly when the client has not enabled this kind of update;
        # check first so no event claims a value was sent.
        cccd = self.device.gatt_server.subscribers.get(connection, {}).get(characteristic.handle, b'')
        if len(cccd) != 2 or not cccd[0] & (0x02 if indicate else 0x01):
            return
        if not indicate:
            await self.device.notify_subscriber(connection, characteristic, data)
            self.emit('notified', dict(fields, value=data.hex()))
            return
        self.emit('indicated', dict(fields, value=data.hex()))
        try:
            await self.device.indicate_subscriber(connection, characteristic, data)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            gone = connection.handle not in self.device.connections
            self.emit('indication-failed', dict(fields, error='disconnection' if gone else
                                                'timeout' if isinstance(error, TimeoutError) else str(error)))
            if gone:
                raise asyncio.CancelledError() from error
            return
        self.emit('indication-confirmed', fields)

    def on_echo(self, connection, characteristic, data):
        """Notifies what the UART database echoes (in order: one task chain per peer)."""
        previous = getattr(self, '_echo_task', None)

        async def send():
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            await self.send_value(connection, characteristic, False, data, 0)
        self._echo_task = asyncio.get_running_loop().create_task(send())

    def on_interval_changed(self, connection):
        """Indicates an accepted Measurement Interval write to its subscribers."""
        characteristic = self.db.measurement_interval
        data = self.db.measurement_interval.value.read(connection)
        asyncio.get_running_loop().create_task(
            self.send_value(connection, characteristic, True, data, 0))


def dump_database(device, name, address) -> dict:
    """The peripheral's own attribute table: a flat list of attributes and the services
    with their characteristics (declaration handle, value handle, properties) and
    descriptors, as a discovering client should find them."""
    server = device.gatt_server
    attributes = []
    for a in server.attributes:
        entry = {'handle': a.handle, 'type': uuid_text(a.type), 'permissions': int(a.permissions)}
        if isinstance(a.value, (bytes, bytearray)):
            entry['value'] = bytes(a.value).hex()
        attributes.append(entry)
    services = []
    current = None
    characteristic = None
    for a in server.attributes:
        if isinstance(a, Service):
            current = {'handle': a.handle, 'end_handle': a.end_group_handle, 'uuid': uuid_text(a.uuid),
                       'primary': a.type == GATT_PRIMARY_SERVICE_ATTRIBUTE_TYPE,
                       'included': [], 'characteristics': []}
            characteristic = None
            services.append(current)
        elif a.type == GATT_INCLUDE_ATTRIBUTE_TYPE and current is not None:
            current['included'].append({'handle': a.handle, 'value': bytes(a.value).hex()})
        elif isinstance(a, CharacteristicDeclaration) and current is not None:
            c = a.characteristic
            characteristic = {'handle': a.handle, 'value_handle': a.value_handle,
                              'end_handle': a.end_group_handle, 'uuid': uuid_text(c.uuid),
                              'properties': int(c.properties), 'property_names': str(c.properties),
                              'descriptors': []}
            current['characteristics'].append(characteristic)
        elif isinstance(a, Characteristic):
            continue
        elif characteristic is not None and a.handle > characteristic['value_handle']:
            characteristic['descriptors'].append({'handle': a.handle, 'uuid': uuid_text(a.type)})
    return {'name': name, 'address': address, 'attributes': attributes, 'services': services}
