#!/usr/bin/python3
"""BlueZ as a test peer: drives bluetoothd over its D-Bus API (BlueZ 5.66, doc/*-api.txt)
for Tests/vm/bluez_test.py. Runs in the test VM with Debian's /usr/bin/python3
(python3-dbus and python3-gi are Debian packages, not in the .venv).

Requests are JSON lines on stdin, {"id": N, "op": NAME, ...}; each gets one reply line
{"id": N, "ok": true, ...} or {"id": N, "error": "org.bluez.Error.X: message"}.
Lines without an id are events: {"event": "value"|"write"|"notifying"|"agent"|"device", ...}.
Every D-Bus call is asynchronous, so the main loop keeps answering the agent, the
advertisement and the GATT application while a Pair() or Connect() is under way.

Ops (adapter is "hci0" unless given):
  adapter   {powered?, pairable?, alias?, discoverable?} -> the Adapter1 properties
  find      {address? | name?, timeout} -> the Device1 properties once discovery sees it
  connect   {address, timeout} -> {"services": [...]} once ServicesResolved
  pair      {address, timeout} -> Device1 properties after Pair()
  device    {address} -> Device1 properties (error when BlueZ has no such device)
  read      {address, uuid} -> {"hex"}; write {address, uuid, hex, type: request|command}
  notify    {address, uuid, on} -> StartNotify/StopNotify; values come as "value" events
  disconnect {address}; remove {address} (forgets it and its bond)
  agent     {capability, passkey?, confirm?, authorize?}: the default agent's answers;
            passkey "ask": RequestPasskey waits for agent_passkey {passkey}
  advertise {name, uuids, on}: one LEAdvertisement1 of type peripheral
  app       {services: [{uuid, characteristics: [{uuid, flags, hex, notify_ms?}]}]}:
            registers a GATT application (GattManager1); writes come as "write" events
  quit
"""
import json
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

BLUEZ = 'org.bluez'
OM = 'org.freedesktop.DBus.ObjectManager'
PROPS = 'org.freedesktop.DBus.Properties'
ADAPTER = 'org.bluez.Adapter1'
DEVICE = 'org.bluez.Device1'
SERVICE = 'org.bluez.GattService1'
CHAR = 'org.bluez.GattCharacteristic1'
CALL_TIMEOUT = 120  # dbus-python's 25 s default is short for pairing under emulation


def plain(value):
    """A D-Bus value as JSON: byte arrays as hex, the rest as Python values."""
    if isinstance(value, dbus.Array) and value.signature == 'y':
        return bytes(value).hex()
    if isinstance(value, (dbus.Array, list)):
        return [plain(v) for v in value]
    if isinstance(value, (dbus.Dictionary, dict)):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.String, dbus.ObjectPath)):
        return str(value)
    if isinstance(value, (dbus.Byte, dbus.Int16, dbus.UInt16, dbus.Int32, dbus.UInt32, dbus.Int64, dbus.UInt64)):
        return int(value)
    return value


def emit(obj):
    sys.stdout.write(json.dumps(obj) + '\n')
    sys.stdout.flush()


class Failure(Exception):
    pass


class Agent(dbus.service.Object):
    """org.bluez.Agent1 with answers set by the test; every call is an event."""

    def __init__(self, bus, path):
        super().__init__(bus, path)
        self.passkey = None
        self.pending = None
        self.confirm = True
        self.authorize = True

    def event(self, method, **fields):
        emit({'event': 'agent', 'method': method, **fields})

    @dbus.service.method('org.bluez.Agent1', in_signature='', out_signature='')
    def Release(self):
        self.event('Release')

    @dbus.service.method('org.bluez.Agent1', in_signature='o', out_signature='u',
                         async_callbacks=('ok', 'err'))
    def RequestPasskey(self, device, ok, err):
        """passkey "ask": the answer waits for the test's agent_passkey (the passkey the
        peer shows is known only once it shows it)."""
        self.event('RequestPasskey', device=str(device))
        if self.passkey == 'ask':
            self.pending = (ok, err)
        elif self.passkey is None:
            err(dbus.DBusException('no passkey set', name='org.bluez.Error.Rejected'))
        else:
            ok(dbus.UInt32(self.passkey))

    def answer(self, passkey):
        if self.pending is None:
            raise Failure('the agent was not asked for a passkey')
        ok, err = self.pending
        self.pending = None
        if passkey is None:
            err(dbus.DBusException('the test cancels', name='org.bluez.Error.Canceled'))
        else:
            ok(dbus.UInt32(passkey))

    @dbus.service.method('org.bluez.Agent1', in_signature='o', out_signature='s')
    def RequestPinCode(self, device):
        self.event('RequestPinCode', device=str(device))
        raise dbus.DBusException('no PIN codes on LE', name='org.bluez.Error.Rejected')

    @dbus.service.method('org.bluez.Agent1', in_signature='ouq', out_signature='')
    def DisplayPasskey(self, device, passkey, entered):
        self.event('DisplayPasskey', device=str(device), passkey=int(passkey), entered=int(entered))

    @dbus.service.method('org.bluez.Agent1', in_signature='os', out_signature='')
    def DisplayPinCode(self, device, pincode):
        self.event('DisplayPinCode', device=str(device), pincode=str(pincode))

    @dbus.service.method('org.bluez.Agent1', in_signature='ou', out_signature='')
    def RequestConfirmation(self, device, passkey):
        self.event('RequestConfirmation', device=str(device), passkey=int(passkey))
        if not self.confirm:
            raise dbus.DBusException('the test says no', name='org.bluez.Error.Rejected')

    @dbus.service.method('org.bluez.Agent1', in_signature='o', out_signature='')
    def RequestAuthorization(self, device):
        self.event('RequestAuthorization', device=str(device))
        if not self.authorize:
            raise dbus.DBusException('the test says no', name='org.bluez.Error.Rejected')

    @dbus.service.method('org.bluez.Agent1', in_signature='os', out_signature='')
    def AuthorizeService(self, device, uuid):
        self.event('AuthorizeService', device=str(device), uuid=str(uuid))

    @dbus.service.method('org.bluez.Agent1', in_signature='', out_signature='')
    def Cancel(self):
        self.event('Cancel')
        self.pending = None


class Advertisement(dbus.service.Object):
    """org.bluez.LEAdvertisement1: a connectable (peripheral) advertisement."""

    def __init__(self, bus, path, name, uuids):
        super().__init__(bus, path)
        self.props = {'Type': 'peripheral', 'LocalName': dbus.String(name),
                      'ServiceUUIDs': dbus.Array(uuids, signature='s'),
                      'Discoverable': dbus.Boolean(True)}

    @dbus.service.method(PROPS, in_signature='s', out_signature='a{sv}')
    def GetAll(self, interface):
        return self.props

    @dbus.service.method('org.bluez.LEAdvertisement1', in_signature='', out_signature='')
    def Release(self):
        emit({'event': 'advertisement', 'released': True})


class Characteristic(dbus.service.Object):
    """org.bluez.GattCharacteristic1 of the test's application. A notifying one sends
    its value with a counter in its first byte every notify_ms."""

    def __init__(self, bus, path, service, spec):
        super().__init__(bus, path)
        self.uuid = spec['uuid']
        self.service = service
        self.flags = spec['flags']
        self.value = bytearray(bytes.fromhex(spec.get('hex', '')))
        self.notify_ms = spec.get('notify_ms', 200)
        self.timer = None

    def properties(self):
        return {CHAR: {'UUID': self.uuid, 'Service': dbus.ObjectPath(self.service),
                       'Flags': dbus.Array(self.flags, signature='s'),
                       'Descriptors': dbus.Array([], signature='o')}}

    @dbus.service.method(CHAR, in_signature='a{sv}', out_signature='ay')
    def ReadValue(self, options):
        emit({'event': 'read', 'uuid': self.uuid, 'options': plain(options)})
        return dbus.Array(bytes(self.value), signature='y')

    @dbus.service.method(CHAR, in_signature='aya{sv}', out_signature='')
    def WriteValue(self, value, options):
        self.value = bytearray(bytes(value))
        emit({'event': 'write', 'uuid': self.uuid, 'hex': bytes(value).hex(), 'options': plain(options)})

    @dbus.service.method(CHAR, in_signature='', out_signature='')
    def StartNotify(self):
        emit({'event': 'notifying', 'uuid': self.uuid, 'on': True})
        if self.timer is None:
            self.timer = GLib.timeout_add(self.notify_ms, self.tick)

    @dbus.service.method(CHAR, in_signature='', out_signature='')
    def StopNotify(self):
        emit({'event': 'notifying', 'uuid': self.uuid, 'on': False})
        if self.timer is not None:
            GLib.source_remove(self.timer)
            self.timer = None

    @dbus.service.signal(PROPS, signature='sa{sv}as')
    def PropertiesChanged(self, interface, changed, invalidated):
        pass

    def tick(self):
        if not self.value:
            self.value = bytearray(1)
        self.value[0] = (self.value[0] + 1) & 0xFF
        self.PropertiesChanged(CHAR, {'Value': dbus.Array(bytes(self.value), signature='y')}, [])
        return True


class Application(dbus.service.Object):
    """The root of a GATT application: ObjectManager over its services and characteristics."""

    def __init__(self, bus, path, services):
        super().__init__(bus, path)
        self.objects = {}
        self.children = []
        for s, service in enumerate(services):
            spath = f'{path}/service{s}'
            chars = []
            for c, spec in enumerate(service['characteristics']):
                char = Characteristic(bus, f'{spath}/char{c}', spath, spec)
                chars.append(char)
                self.children.append(char)
                self.objects[dbus.ObjectPath(char.__dbus_object_path__)] = char.properties()
            self.objects[dbus.ObjectPath(spath)] = {SERVICE: {
                'UUID': service['uuid'], 'Primary': dbus.Boolean(True),
                'Characteristics': dbus.Array([dbus.ObjectPath(c.__dbus_object_path__) for c in chars], signature='o'),
                'Includes': dbus.Array([], signature='o')}}
            self.children.append(_Plain(bus, spath))

    @dbus.service.method(OM, out_signature='a{oa{sa{sv}}}')
    def GetManagedObjects(self):
        return self.objects

    def remove(self):
        for child in self.children:
            if isinstance(child, Characteristic) and child.timer is not None:
                GLib.source_remove(child.timer)
            child.remove_from_connection()
        self.remove_from_connection()


class _Plain(dbus.service.Object):
    """A service object: BlueZ takes its properties from GetManagedObjects."""


class Peer:
    def __init__(self):
        self.bus = dbus.SystemBus()
        self.agent = None
        self.advertisement = None
        self.app = None
        self.waiters = []  # (predicate, on_match): called on every device/property change
        self.bus.add_signal_receiver(self.properties_changed, dbus_interface=PROPS,
                                     signal_name='PropertiesChanged', bus_name=BLUEZ, path_keyword='path')
        self.bus.add_signal_receiver(self.interfaces_added, dbus_interface=OM,
                                     signal_name='InterfacesAdded', bus_name=BLUEZ)

    # --- object lookup
    def objects(self):
        om = dbus.Interface(self.bus.get_object(BLUEZ, '/'), OM)
        return om.GetManagedObjects(timeout=CALL_TIMEOUT)

    def adapter_path(self, req):
        return '/org/bluez/' + req.get('adapter', 'hci0')

    def device_path(self, req, objects=None):
        objects = objects or self.objects()
        address = req['address'].upper()
        for path, ifaces in objects.items():
            dev = ifaces.get(DEVICE)
            if dev and str(dev['Address']).upper() == address and str(path).startswith(self.adapter_path(req) + '/'):
                return str(path)
        raise Failure(f'BlueZ has no device {address}')

    def char_path(self, req):
        objects = self.objects()
        device = self.device_path(req, objects)
        uuid = req['uuid'].lower()
        if len(uuid) == 4:
            uuid = f'0000{uuid}-0000-1000-8000-00805f9b34fb'
        for path, ifaces in objects.items():
            ch = ifaces.get(CHAR)
            if ch and str(path).startswith(device + '/') and str(ch['UUID']).lower() == uuid:
                return str(path)
        raise Failure(f'no characteristic {req["uuid"]} on {req["address"]}')

    def iface(self, path, name):
        return dbus.Interface(self.bus.get_object(BLUEZ, path), name)

    def device_props(self, path):
        return plain(self.iface(path, PROPS).GetAll(DEVICE, timeout=CALL_TIMEOUT))

    def services(self, device):
        out = []
        objects = self.objects()
        for path, ifaces in sorted(objects.items()):
            s = ifaces.get(SERVICE)
            if s and str(path).startswith(device + '/'):
                chars = [{'uuid': str(c[CHAR]['UUID']), 'flags': plain(c[CHAR]['Flags']), 'path': str(p)}
                         for p, c in sorted(objects.items()) if CHAR in c and str(c[CHAR]['Service']) == str(path)]
                out.append({'uuid': str(s['UUID']), 'path': str(path), 'characteristics': chars})
        return out

    # --- signals
    def properties_changed(self, interface, changed, invalidated, path=None):
        if interface == CHAR and 'Value' in changed:
            emit({'event': 'value', 'path': str(path), 'hex': plain(changed['Value'])})
        if interface == DEVICE:
            emit({'event': 'device', 'path': str(path), 'changed': plain(changed)})
        self.check_waiters()

    def interfaces_added(self, path, interfaces):
        self.check_waiters()

    def check_waiters(self):
        for waiter in list(self.waiters):
            waiter()

    def wait(self, reply, check, timeout, what):
        """Calls check() now and on every change until it returns a result (replied) or
        the timeout passes (an error)."""
        state = {}

        def done(result=None, error=None):
            if state.get('done'):
                return
            state['done'] = True
            if waiter in self.waiters:
                self.waiters.remove(waiter)
            if state['timer']:
                GLib.source_remove(state['timer'])
            reply(result, error)

        def waiter():
            try:
                result = check()
            except Exception as e:  # a failed check ends the wait with its error
                done(error=describe(e))
                return
            if result is not None:
                done(result)

        def expire():
            state['timer'] = 0
            done(error=f'timeout: {what} after {timeout} s')
            return False

        state['timer'] = GLib.timeout_add(int(timeout * 1000), expire)
        self.waiters.append(waiter)
        waiter()

    # --- ops; each calls reply(result, error) once
    def op_adapter(self, req, reply):
        # The adapter appears on the bus once bluetoothd has read the controller.
        self.wait(lambda result, error: self.adapter_ready(req, reply) if error is None else reply(error=error),
                  lambda: True if self.adapter_path(req) in self.objects() else None, 30,
                  f'no {self.adapter_path(req)}')

    def adapter_ready(self, req, reply):
        props = self.iface(self.adapter_path(req), PROPS)
        for key, name in (('powered', 'Powered'), ('pairable', 'Pairable'), ('discoverable', 'Discoverable')):
            if key in req:
                props.Set(ADAPTER, name, dbus.Boolean(req[key]), timeout=CALL_TIMEOUT)
        if 'alias' in req:
            props.Set(ADAPTER, 'Alias', dbus.String(req['alias']), timeout=CALL_TIMEOUT)
        reply(plain(props.GetAll(ADAPTER, timeout=CALL_TIMEOUT)))

    def op_find(self, req, reply):
        adapter = self.iface(self.adapter_path(req), ADAPTER)
        adapter.SetDiscoveryFilter({'Transport': 'le', 'DuplicateData': dbus.Boolean(False)}, timeout=CALL_TIMEOUT)

        def check():
            for path, ifaces in self.objects().items():
                dev = ifaces.get(DEVICE)
                if not dev or not str(path).startswith(self.adapter_path(req) + '/'):
                    continue
                if 'address' in req and str(dev['Address']).upper() != req['address'].upper():
                    continue
                if 'name' in req and str(dev.get('Name', '')) != req['name']:
                    continue
                if 'RSSI' not in dev and not req.get('known', False):
                    continue  # an old object not seen by this discovery
                return {**plain(dev), 'path': str(path)}
            return None

        def stop_then(result, error):
            try:
                adapter.StopDiscovery(timeout=CALL_TIMEOUT)
            except dbus.DBusException:
                pass
            reply(result, error)

        adapter.StartDiscovery(timeout=CALL_TIMEOUT)
        self.wait(stop_then, check, req.get('timeout', 30), f'no device {req.get("address") or req.get("name")}')

    def op_connect(self, req, reply):
        path = self.device_path(req)
        dev = self.iface(path, DEVICE)
        timeout = req.get('timeout', 60)
        deadline = GLib.get_monotonic_time() / 1e6 + timeout  # Connect() and the discovery after it

        def resolved():
            props = self.device_props(path)
            if props.get('Connected') and props.get('ServicesResolved'):
                return {**props, 'services': self.services(path)}
            return None

        def connected():
            left = max(1.0, deadline - GLib.get_monotonic_time() / 1e6)
            self.wait(reply, resolved, left, 'services not resolved')

        if self.device_props(path).get('Connected'):
            connected()  # Pair() connected it
            return
        dev.Connect(reply_handler=guarded(reply, connected, replies=False),
                    error_handler=lambda e: reply(error=dbus_error(e)), timeout=timeout)

    def op_pair(self, req, reply):
        path = self.device_path(req)
        self.iface(path, DEVICE).Pair(reply_handler=guarded(reply, lambda: self.device_props(path)),
                                      error_handler=lambda e: reply(error=dbus_error(e)),
                                      timeout=req.get('timeout', CALL_TIMEOUT))

    def op_device(self, req, reply):
        path = self.device_path(req)
        reply({**self.device_props(path), 'path': path, 'services': self.services(path)})

    def op_read(self, req, reply):
        self.iface(self.char_path(req), CHAR).ReadValue(
            {}, reply_handler=lambda v: reply({'hex': plain(v)}),
            error_handler=lambda e: reply(error=dbus_error(e)), timeout=req.get('timeout', 60))

    def op_write(self, req, reply):
        self.iface(self.char_path(req), CHAR).WriteValue(
            dbus.Array(bytes.fromhex(req['hex']), signature='y'), {'type': req.get('type', 'request')},
            reply_handler=lambda: reply({}), error_handler=lambda e: reply(error=dbus_error(e)),
            timeout=req.get('timeout', 60))

    def op_notify(self, req, reply):
        path = self.char_path(req)
        char = self.iface(path, CHAR)
        call = char.StartNotify if req.get('on', True) else char.StopNotify
        call(reply_handler=lambda: reply({'path': path}), error_handler=lambda e: reply(error=dbus_error(e)),
             timeout=req.get('timeout', 60))

    def op_disconnect(self, req, reply):
        path = self.device_path(req)
        self.iface(path, DEVICE).Disconnect(
            reply_handler=guarded(reply, lambda: self.wait(
                reply, lambda: {} if not self.device_props(path).get('Connected') else None, 30, 'still connected'),
                replies=False),
            error_handler=lambda e: reply(error=dbus_error(e)), timeout=60)

    def op_remove(self, req, reply):
        try:
            path = self.device_path(req)
        except Failure:
            reply({'removed': False})
            return
        self.iface(self.adapter_path(req), ADAPTER).RemoveDevice(dbus.ObjectPath(path), timeout=CALL_TIMEOUT)
        reply({'removed': True})

    def op_agent(self, req, reply):
        manager = self.iface('/org/bluez', 'org.bluez.AgentManager1')
        if self.agent is None:
            self.agent = Agent(self.bus, '/test/agent')
        else:
            manager.UnregisterAgent('/test/agent', timeout=CALL_TIMEOUT)
        self.agent.passkey = req.get('passkey')
        self.agent.confirm = req.get('confirm', True)
        self.agent.authorize = req.get('authorize', True)
        manager.RegisterAgent('/test/agent', req.get('capability', 'KeyboardDisplay'), timeout=CALL_TIMEOUT)
        manager.RequestDefaultAgent('/test/agent', timeout=CALL_TIMEOUT)
        reply({})

    def op_agent_passkey(self, req, reply):
        if self.agent is None:
            raise Failure('no agent registered')
        self.agent.answer(req.get('passkey'))
        reply({})

    def op_advertise(self, req, reply):
        manager = self.iface(self.adapter_path(req), 'org.bluez.LEAdvertisingManager1')
        if self.advertisement is not None:
            manager.UnregisterAdvertisement('/test/adv', timeout=CALL_TIMEOUT)
            self.advertisement.remove_from_connection()
            self.advertisement = None
        if not req.get('on', True):
            reply({})
            return
        self.advertisement = Advertisement(self.bus, '/test/adv', req['name'], req.get('uuids', []))
        manager.RegisterAdvertisement('/test/adv', {}, reply_handler=lambda: reply({}),
                                      error_handler=lambda e: reply(error=dbus_error(e)), timeout=CALL_TIMEOUT)

    def op_app(self, req, reply):
        manager = self.iface(self.adapter_path(req), 'org.bluez.GattManager1')
        if self.app is not None:
            manager.UnregisterApplication('/test/app', timeout=CALL_TIMEOUT)
            self.app.remove()
            self.app = None
        if not req.get('services'):
            reply({})
            return
        self.app = Application(self.bus, '/test/app', req['services'])
        manager.RegisterApplication('/test/app', {}, reply_handler=lambda: reply({}),
                                    error_handler=lambda e: reply(error=dbus_error(e)), timeout=CALL_TIMEOUT)


def guarded(reply, work, replies=True):
    """A D-Bus reply handler: work() (its result is the reply unless replies=False);
    an exception is the request's error, not a lost reply."""
    def handler(*_):
        try:
            result = work()
        except Exception as e:
            reply(error=describe(e))
            return
        if replies:
            reply(result)
    return handler


def describe(e):
    if isinstance(e, dbus.DBusException):
        return f'{e.get_dbus_name()}: {e.get_dbus_message()}'
    if isinstance(e, Failure):
        return str(e)
    return f'{type(e).__name__}: {e}'


dbus_error = describe


def main():
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    loop = GLib.MainLoop()
    peer = Peer()
    emit({'event': 'ready'})
    pending = bytearray()

    def answer(req_id):
        answered = []

        def reply(result=None, error=None):
            if answered:
                return
            answered.append(True)
            if error is not None:
                emit({'id': req_id, 'error': error})
            else:
                emit({'id': req_id, 'ok': True, **(result or {})})
        return reply

    def readable(fd, condition):
        import os
        data = os.read(fd, 65536)
        if not data:
            loop.quit()
            return False
        pending.extend(data)
        while b'\n' in pending:
            line, _, rest = bytes(pending).partition(b'\n')
            pending[:] = rest
            if not line.strip():
                continue
            req = json.loads(line)
            reply = answer(req.get('id'))
            if req['op'] == 'quit':
                reply()
                loop.quit()
                return False
            handler = getattr(peer, 'op_' + req['op'], None)
            try:
                if handler is None:
                    raise Failure(f'unknown op {req["op"]}')
                handler(req, reply)
            except Exception as e:  # every request gets its answer; the loop goes on
                reply(error=describe(e))
        return True

    GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_IN | GLib.IO_HUP, readable)
    loop.run()


if __name__ == '__main__':
    main()
