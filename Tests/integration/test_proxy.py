"""hcigatt proxy against Home Assistant's own client library (aioesphomeapi, from PyPI), with
Bumble virtual controllers and peripherals on the radio side."""
import asyncio
import base64
import json
import os
import queue
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from aioesphomeapi import APIClient
from aioesphomeapi.core import InvalidEncryptionKeyAPIError, RequiresEncryptionAPIError, EncryptionPlaintextAPIError
from aioesphomeapi.model import BluetoothProxyFeature, BluetoothScannerMode, BluetoothScannerState

from peer import HCIGATT, Peer

THERMO = 'Thermo-1,service=1809,service=180F,mfr=004c:01020304,txpower=4'
HEART = 'Pulse-2,service=180D,address=C0:F1:F2:F3:F4:22,random'
KEY = base64.b64encode(bytes(range(32))).decode()


class Proxy:
    """An `hcigatt proxy` process on a free port; its --json log lines in a queue."""

    def __init__(self, peer, *args, state_dir=None, mdns=False):
        self.tmp = tempfile.TemporaryDirectory()
        self.state_dir = state_dir or os.path.join(self.tmp.name, 'state')
        # mDNS only where a test asks, in a network namespace of its own (it would
        # announce on the machine's network otherwise).
        cmd = [HCIGATT, 'proxy', '--transport', peer.transport, '--listen', '127.0.0.1:0', '--json',
               '--state-dir', self.state_dir, *([] if mdns else ['--no-mdns']), *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.text = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        listening = self.wait_for(lambda e: e.get('event') == 'listening', 30)
        self.port = listening['port']

    def _read(self):
        for line in self.proc.stderr:
            self.text.append(line)
            try:
                self.lines.put(json.loads(line))
            except ValueError:
                self.lines.put({'text': line.rstrip('\n')})
        self.lines.put(None)

    def wait_for(self, match, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                e = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if e is None:
                raise AssertionError(f'proxy exited ({self.proc.poll()}): {"".join(self.text)}')
            if match(e):
                return e
        raise AssertionError(f'no such log line within {timeout} s: {"".join(self.text)}')

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.thread.join(timeout=5)
        self.proc.stderr.close()
        self.tmp.cleanup()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def connected(port, key=KEY, **kw):
    client = APIClient('127.0.0.1', port, None, noise_psk=key, **kw)
    await client.connect(login=True)
    return client


async def collect_advertisements(client, seconds, want=None):
    """Raw advertisements for `seconds` (or until the addresses in `want` were all seen)."""
    seen = {}
    done = asyncio.Event()

    def on_ads(msg):
        for a in msg.advertisements:
            seen.setdefault(a.address, []).append(a)
        if want and want <= set(seen):
            done.set()
    unsub = client.subscribe_bluetooth_le_raw_advertisements(on_ads)
    try:
        await asyncio.wait_for(done.wait(), seconds)
    except asyncio.TimeoutError:
        pass
    unsub()
    return seen


THERMO_ADDRESS = 0xF0F1F2F3F401
HEART_ADDRESS = 0xC0F1F2F3F422


HEALTH = 'Health-1,service=1809,gatt=health'
HEALTH_ADDRESS = 0xF0F1F2F3F401
PROXY_FLAGS = 0


async def connect_device(client, address, address_type=0, has_cache=False, timeout=20):
    """bluetooth_device_connect as bleak-esphome calls it; returns (mtu, states list)."""
    info = await client.device_info()
    flags = info.bluetooth_proxy_feature_flags_compat(client.api_version)
    states = []
    up = asyncio.get_running_loop().create_future()

    def on_state(connected, mtu, error):
        states.append((connected, mtu, error))
        if not up.done():
            up.set_result((connected, mtu, error))
    await client.bluetooth_device_connect(address, on_state, timeout=timeout, feature_flags=flags,
                                          has_cache=has_cache, address_type=address_type)
    connected, mtu, error = await up
    return connected, mtu, error, states


def characteristic(services, uuid16):
    for s in services.services:
        for c in s.characteristics:
            if c.uuid.lower().startswith(f'0000{uuid16:04x}-'):
                return c
    raise AssertionError(f'no {uuid16:04X} in {services}')


class ProxyTests(unittest.TestCase):
    def test_device_info_and_raw_advertisements_over_noise(self):
        with Peer('--peripheral', THERMO, '--peripheral', HEART) as peer, Proxy(peer, '--key', KEY, '--name', 'proxy-one') as proxy:
            async def go():
                client = await connected(proxy.port)
                info = await client.device_info()
                self.assertEqual(info.name, 'proxy-one')
                self.assertRegex(info.mac_address, r'^[0-9A-F]{2}(:[0-9A-F]{2}){5}$')
                self.assertRegex(info.bluetooth_mac_address, r'^[0-9A-F]{2}(:[0-9A-F]{2}){5}$')
                self.assertNotEqual(info.mac_address, info.bluetooth_mac_address)
                self.assertEqual(info.project_name, 'hcigatt.bluetooth-proxy')
                self.assertTrue(info.api_encryption_supported)
                flags = BluetoothProxyFeature(info.bluetooth_proxy_feature_flags_compat(client.api_version))
                self.assertIn(BluetoothProxyFeature.PASSIVE_SCAN, flags)
                self.assertIn(BluetoothProxyFeature.RAW_ADVERTISEMENTS, flags)
                entities, services = await client.list_entities_services()
                self.assertEqual((entities, services), ([], []))
                seen = await collect_advertisements(client, 15, want={THERMO_ADDRESS, HEART_ADDRESS})
                self.assertIn(THERMO_ADDRESS, seen)
                self.assertIn(HEART_ADDRESS, seen)
                thermo = seen[THERMO_ADDRESS][-1]
                self.assertEqual(thermo.address_type, 0)
                self.assertIn(b'Thermo-1', bytes(thermo.data), 'advertising data and scan response together')
                self.assertTrue(-127 <= thermo.rssi <= 20)
                self.assertEqual(seen[HEART_ADDRESS][-1].address_type, 1)
                await client.disconnect()
            run(go())
            proxy.wait_for(lambda e: e.get('event') == 'client-closed' and 'disconnected' in e['reason'])

    def test_wrong_key_is_an_invalid_encryption_key(self):
        with Peer('--peripheral', THERMO) as peer, Proxy(peer, '--key', KEY, '--name', 'keyed') as proxy:
            async def go():
                wrong = base64.b64encode(b'0' * 32).decode()  # the probe key HA tries
                with self.assertRaises(InvalidEncryptionKeyAPIError) as cm:
                    await connected(proxy.port, key=wrong)
                self.assertEqual(cm.exception.received_name, 'keyed', 'the server hello came first')
                with self.assertRaises(RequiresEncryptionAPIError):
                    await connected(proxy.port, key=None)
            run(go())
            e = proxy.wait_for(lambda e: e.get('event') == 'client-closed')
            self.assertIn('wrong encryption key', e['reason'])

    def test_plaintext_proxy_and_an_encrypted_client(self):
        with Peer('--peripheral', THERMO) as peer, Proxy(peer, '--insecure-plaintext') as proxy:
            async def go():
                client = await connected(proxy.port, key=None)
                info = await client.device_info()
                self.assertFalse(info.api_encryption_supported)
                seen = await collect_advertisements(client, 15, want={THERMO_ADDRESS})
                self.assertIn(THERMO_ADDRESS, seen)
                await client.disconnect()
                with self.assertRaises(EncryptionPlaintextAPIError):
                    await connected(proxy.port)
            run(go())

    def test_first_start_makes_a_key_and_an_identity_it_keeps(self):
        with tempfile.TemporaryDirectory() as tmp, Peer('--peripheral', THERMO) as peer:
            state = os.path.join(tmp, 'state')
            with Proxy(peer, state_dir=state) as proxy:
                key_path = os.path.join(state, 'proxy.key')
                self.assertEqual(stat.S_IMODE(os.stat(key_path).st_mode), 0o600)
                self.assertEqual(stat.S_IMODE(os.stat(state).st_mode), 0o700)
                with open(key_path) as f:
                    key = f.read().strip()
                self.assertIn(key, ''.join(proxy.text), 'the new key is printed once')
                self.assertEqual(len(base64.b64decode(key)), 32)

                async def first():
                    client = await connected(proxy.port, key=key)
                    mac = (await client.device_info()).mac_address
                    await client.disconnect()
                    return mac
                mac = run(first())
            with Proxy(peer, state_dir=state) as proxy:
                self.assertNotIn(key, ''.join(proxy.text), 'printed only when made')

                async def second():
                    client = await connected(proxy.port, key=key)
                    again = (await client.device_info()).mac_address
                    await client.disconnect()
                    return again
                self.assertEqual(run(second()), mac, 'the same device to Home Assistant')

    def test_scanner_state_and_mode_switch(self):
        with Peer('--peripheral', THERMO) as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                client = await connected(proxy.port)
                states = []
                got = asyncio.Event()

                def on_state(s):
                    states.append(s)
                    got.set()
                client.subscribe_bluetooth_scanner_state(on_state)
                unsub = client.subscribe_bluetooth_le_raw_advertisements(lambda m: None)
                await asyncio.wait_for(got.wait(), 10)
                self.assertEqual(states[0].state, BluetoothScannerState.RUNNING)
                self.assertEqual(states[0].mode, BluetoothScannerMode.ACTIVE)
                got.clear()
                client.bluetooth_scanner_set_mode(BluetoothScannerMode.PASSIVE)
                await asyncio.wait_for(got.wait(), 10)
                self.assertEqual(states[-1].mode, BluetoothScannerMode.PASSIVE)
                unsub()
                await client.disconnect()
            run(go())
            proxy.wait_for(lambda e: e.get('event') == 'scanning' and e['active'] is False)

    def test_two_clients_each_get_the_advertisements(self):
        with Peer('--peripheral', THERMO, '--peripheral', HEART) as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                a = await connected(proxy.port, client_info='Home Assistant')
                b = await connected(proxy.port, client_info='diagnostics')
                seen_a, seen_b = await asyncio.gather(collect_advertisements(a, 15, want={THERMO_ADDRESS, HEART_ADDRESS}),
                                                      collect_advertisements(b, 15, want={THERMO_ADDRESS, HEART_ADDRESS}))
                self.assertEqual({THERMO_ADDRESS, HEART_ADDRESS} - set(seen_a), set())
                self.assertEqual({THERMO_ADDRESS, HEART_ADDRESS} - set(seen_b), set())
                await a.disconnect()
                # The other goes on.
                seen = await collect_advertisements(b, 15, want={THERMO_ADDRESS})
                self.assertIn(THERMO_ADDRESS, seen)
                await b.disconnect()
            run(go())

    def test_stop_says_goodbye_and_exits_zero(self):
        with Peer('--peripheral', THERMO) as peer:
            proxy = Proxy(peer, '--key', KEY)
            async def go():
                client = await connected(proxy.port)
                gone = asyncio.Event()
                client.set_debug(False)
                await client.device_info()
                proxy.proc.send_signal(signal.SIGTERM)
                for _ in range(100):
                    if client._connection is None or not client._connection.is_connected:
                        gone.set()
                        break
                    await asyncio.sleep(0.05)
                self.assertTrue(gone.is_set(), 'the client was told to disconnect')
            run(go())
            started = time.monotonic()
            self.assertEqual(proxy.proc.wait(timeout=10), 0)
            self.assertLess(time.monotonic() - started, 3, 'a prompt stop')
            proxy.stop()

    def test_gatt_through_the_proxy(self):
        with Peer('--peripheral', HEALTH) as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                client = await connected(proxy.port)
                slots = []
                client.subscribe_bluetooth_connections_free(lambda free, limit, allocated: slots.append((free, limit, list(allocated))))
                connected_, mtu, error, states = await connect_device(client, HEALTH_ADDRESS)
                self.assertEqual((connected_, error), (True, 0), states)
                self.assertGreater(mtu, 23)
                services = await client.bluetooth_gatt_get_services(HEALTH_ADDRESS)
                uuids = {s.uuid[4:8].upper() for s in services.services}
                self.assertTrue({'1809', '180A', '180F', '180D'} <= uuids, uuids)
                model = characteristic(services, 0x2A24)
                self.assertEqual(bytes(await client.bluetooth_gatt_read(HEALTH_ADDRESS, model.handle)), b'bumble-peer')
                # A 600-byte value: read to the end (Read Blob), not cut at the MTU.
                long_value = next(c for s in services.services for c in s.characteristics if c.uuid.endswith('0001') and c.uuid.startswith('68636967'))
                self.assertEqual(bytes(await client.bluetooth_gatt_read(HEALTH_ADDRESS, long_value.handle)), bytes(i % 256 for i in range(600)))
                echo = next(c for s in services.services for c in s.characteristics if c.uuid.endswith('0002') and c.uuid.startswith('68636967'))
                await client.bluetooth_gatt_write(HEALTH_ADDRESS, echo.handle, b'x' * 300, True)
                self.assertEqual(bytes(await client.bluetooth_gatt_read(HEALTH_ADDRESS, echo.handle)), b'x' * 300)
                await client.bluetooth_gatt_write(HEALTH_ADDRESS, echo.handle, b'quick', False)
                # Notifications: the client asks for delivery, then writes the CCCD itself.
                heart = characteristic(services, 0x2A37)
                cccd = next(d for d in heart.descriptors if d.uuid[4:8].upper() == '2902')
                got = []
                arrived = asyncio.Event()

                def on_notify(handle, data):
                    got.append((handle, bytes(data)))
                    arrived.set()
                stop, _ = await client.bluetooth_gatt_start_notify(HEALTH_ADDRESS, heart.handle, on_notify)
                await client.bluetooth_gatt_write_descriptor(HEALTH_ADDRESS, cccd.handle, b'\x01\x00')
                await asyncio.wait_for(arrived.wait(), 10)
                self.assertEqual(got[0][0], heart.handle)
                self.assertEqual(got[0][1][:2], bytes([0x16, 72]), 'flags, 72 bpm')
                self.assertEqual(bytes(await client.bluetooth_gatt_read_descriptor(HEALTH_ADDRESS, cccd.handle)), b'\x01\x00')
                await stop()
                # An error keeps its ATT code: the secret needs encryption... which the
                # proxy raises (pairing Just Works), as ESPHome's stack does.
                # A read of a handle that does not exist: Invalid Handle (1).
                from aioesphomeapi.core import BluetoothGATTAPIError
                with self.assertRaises(BluetoothGATTAPIError) as cm:
                    await client.bluetooth_gatt_read(HEALTH_ADDRESS, 0xFFF0)
                self.assertEqual(cm.exception.error.error, 1)
                self.assertTrue(any(limit == 5 and free == 4 and allocated == [HEALTH_ADDRESS] for free, limit, allocated in slots), slots)
                await client.bluetooth_device_disconnect(HEALTH_ADDRESS)
                for _ in range(50):
                    if slots and slots[-1][0] == 5:
                        break
                    await asyncio.sleep(0.1)
                self.assertEqual(slots[-1], (5, 5, []))
                await client.disconnect()
            run(go(), timeout=90)

    def test_with_cache_connect_needs_no_discovery(self):
        with Peer('--peripheral', HEALTH) as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                client = await connected(proxy.port)
                ok, mtu, error, _ = await connect_device(client, HEALTH_ADDRESS)
                services = await client.bluetooth_gatt_get_services(HEALTH_ADDRESS)
                model = characteristic(services, 0x2A24)
                await client.bluetooth_device_disconnect(HEALTH_ADDRESS)
                # Reconnected with the client's own cache: reads by handle at once.
                ok, mtu, error, _ = await connect_device(client, HEALTH_ADDRESS, has_cache=True)
                self.assertEqual((ok, error), (True, 0))
                self.assertEqual(bytes(await client.bluetooth_gatt_read(HEALTH_ADDRESS, model.handle)), b'bumble-peer')
                await client.disconnect()
            run(go(), timeout=90)
            # The client's links went with it.
            proxy.wait_for(lambda e: e.get('event') == 'link' and e['what'] == 'disconnected')

    def test_a_vanished_client_frees_its_slots(self):
        # Client A is a process of its own that takes the one slot and is then killed: no
        # goodbye, its TCP connection just ends.
        holder = (
            'import asyncio, sys\n'
            'sys.path.insert(0, sys.argv[3])\n'
            'from test_proxy import connected, connect_device\n'
            'async def go():\n'
            '    c = await connected(int(sys.argv[1]), key=sys.argv[2])\n'
            '    ok, mtu, error, _ = await connect_device(c, 0xF0F1F2F3F401)\n'
            '    print("up" if ok else f"failed {error}", flush=True)\n'
            '    await asyncio.sleep(600)\n'
            'asyncio.run(go())\n')
        with Peer('--peripheral', HEALTH) as peer, Proxy(peer, '--key', KEY, '--slots', '1') as proxy:
            a = subprocess.Popen([sys.executable, '-c', holder, str(proxy.port), KEY, os.path.dirname(os.path.abspath(__file__))],
                                 stdout=subprocess.PIPE, text=True)
            try:
                self.assertEqual(a.stdout.readline().strip(), 'up')

                async def go():
                    b = await connected(proxy.port)
                    slots = []
                    b.subscribe_bluetooth_connections_free(lambda free, limit, allocated: slots.append((free, limit)))
                    for _ in range(50):
                        if slots:
                            break
                        await asyncio.sleep(0.1)
                    self.assertEqual(slots[-1], (0, 1), 'the one slot is taken')
                    ok, _, error, _ = await connect_device(b, HEALTH_ADDRESS)
                    self.assertFalse(ok, 'no free slot')
                    a.kill()
                    for _ in range(100):
                        if slots[-1] == (1, 1):
                            break
                        await asyncio.sleep(0.1)
                    self.assertEqual(slots[-1], (1, 1), 'freed when its client vanished')
                    ok, _, error, _ = await connect_device(b, HEALTH_ADDRESS)
                    self.assertEqual((ok, error), (True, 0))
                    await b.disconnect()
                run(go(), timeout=90)
            finally:
                a.kill()
                a.wait()
                a.stdout.close()

    def test_mdns_found_by_zeroconf_in_a_network_namespace(self):
        # python-zeroconf (Home Assistant's mDNS library) browses and resolves the proxy, in a
        # network namespace with only a multicast loopback; then sees its goodbye.
        script = (
            'import json, subprocess, sys, time\n'
            'sys.path.insert(0, sys.argv[1])\n'
            'subprocess.run(["ip", "link", "set", "lo", "up"], check=True)\n'
            'subprocess.run(["ip", "link", "set", "lo", "multicast", "on"], check=True)\n'
            'from zeroconf import Zeroconf, ServiceBrowser, ServiceStateChange\n'
            'from peer import Peer\n'
            'from test_proxy import Proxy, THERMO, KEY\n'
            'out = {}\n'
            'with Peer("--peripheral", THERMO) as peer:\n'
            '    proxy = Proxy(peer, "--key", KEY, "--name", "netns-proxy", mdns=True)\n'
            '    zc = Zeroconf(interfaces=["127.0.0.1"])\n'
            '    events = []\n'
            '    def changed(zeroconf, service_type, name, state_change):\n'
            '        events.append((name, str(state_change)))\n'
            '    browser = ServiceBrowser(zc, "_esphomelib._tcp.local.", handlers=[changed])\n'
            '    info = zc.get_service_info("_esphomelib._tcp.local.", "netns-proxy._esphomelib._tcp.local.", timeout=5000)\n'
            '    out["port"] = info.port if info else None\n'
            '    out["proxy_port"] = proxy.port\n'
            '    out["txt"] = {k.decode(): (v or b"").decode() for k, v in (info.properties if info else {}).items()}\n'
            '    out["addresses"] = info.parsed_addresses() if info else []\n'
            '    out["server"] = info.server if info else None\n'
            '    for _ in range(50):\n'
            '        if any("Added" in e[1] for e in events): break\n'
            '        time.sleep(0.1)\n'
            '    proxy.stop()\n'
            '    for _ in range(50):\n'
            '        if any("Removed" in e[1] for e in events): break\n'
            '        time.sleep(0.1)\n'
            '    out["events"] = events\n'
            '    browser.cancel()\n'
            '    zc.close()\n'
            'print(json.dumps(out))\n')
        here = os.path.dirname(os.path.abspath(__file__))
        p = subprocess.run(['unshare', '-n', sys.executable, '-c', script, here], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ))
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertEqual(out['port'], out['proxy_port'], out)
        self.assertEqual(out['server'], 'netns-proxy.local.')
        self.assertEqual(out['addresses'], ['127.0.0.1'])
        txt = out['txt']
        self.assertRegex(txt['mac'], r'^[0-9a-f]{12}$')
        self.assertEqual(txt['api_encryption'], 'Noise_NNpsk0_25519_ChaChaPoly_SHA256')
        self.assertEqual(txt['project_name'], 'hcigatt.bluetooth-proxy')
        self.assertIn('version', txt)
        self.assertIn(('netns-proxy._esphomelib._tcp.local.', 'ServiceStateChange.Added'), [tuple(e) for e in out['events']])
        self.assertIn(('netns-proxy._esphomelib._tcp.local.', 'ServiceStateChange.Removed'), [tuple(e) for e in out['events']],
                      'the goodbye at stop')

    def test_passkey_pairing_and_the_bond_reused(self):
        # A device that shows a passkey (Bumble: 123456), paired by HA through the proxy with
        # the passkey given to the proxy; the bond encrypts the next connection at once.
        secret_uuid = '68636967-6174-7400-8000-00805f9b0003'
        with tempfile.TemporaryDirectory() as bonds, Peer('--peripheral', HEALTH + ',pairing=passkey') as peer, \
                Proxy(peer, '--key', KEY, '--bond-dir', bonds, '--passkey', 'F0:F1:F2:F3:F4:01=123456') as proxy:
            async def go():
                client = await connected(proxy.port)
                ok, _, error, _ = await connect_device(client, HEALTH_ADDRESS)
                self.assertEqual((ok, error), (True, 0))
                services = await client.bluetooth_gatt_get_services(HEALTH_ADDRESS)
                secret = next(c for s in services.services for c in s.characteristics if c.uuid == secret_uuid)
                paired = await client.bluetooth_device_pair(HEALTH_ADDRESS)
                self.assertTrue(paired.paired, paired)
                self.assertEqual(paired.error, 0)
                value = bytes(await client.bluetooth_gatt_read(HEALTH_ADDRESS, secret.handle))
                await client.bluetooth_device_disconnect(HEALTH_ADDRESS)
                ok, _, error, _ = await connect_device(client, HEALTH_ADDRESS, has_cache=True)
                self.assertEqual((ok, error), (True, 0))
                self.assertEqual(bytes(await client.bluetooth_gatt_read(HEALTH_ADDRESS, secret.handle)), value,
                                 'encrypted with the bond, no pairing again')
                await client.disconnect()
                return value
            self.assertTrue(run(go(), timeout=120))
            self.assertTrue(any(f.endswith('.bond') or 'F0F1F2F3F401' in f for f in os.listdir(bonds)), os.listdir(bonds))
            self.assertNotIn('asks for a passkey', ''.join(proxy.text))

    def test_a_wrong_passkey_is_a_failed_pairing(self):
        with tempfile.TemporaryDirectory() as bonds, Peer('--peripheral', HEALTH + ',pairing=passkey') as peer, \
                Proxy(peer, '--key', KEY, '--bond-dir', bonds, '--passkey', 'F0:F1:F2:F3:F4:01=000000') as proxy:
            async def go():
                client = await connected(proxy.port)
                ok, _, _, _ = await connect_device(client, HEALTH_ADDRESS)
                self.assertTrue(ok)
                paired = await client.bluetooth_device_pair(HEALTH_ADDRESS)
                self.assertFalse(paired.paired)
                self.assertNotEqual(paired.error, 0)
                await client.disconnect()
            run(go(), timeout=120)
            self.assertEqual([f for f in os.listdir(bonds) if 'F0F1F2F3F401' in f and not f.endswith('.key')], [], 'no bond kept')

    def test_bleak_esphome_as_home_assistant_uses_it(self):
        # The path of HA's Bluetooth integrations: bleak-esphome's scanner on habluetooth's
        # manager, a BLEDevice from it, bleak-retry-connector's establish_connection, then
        # plain Bleak calls (read, notify, write) going through the proxy.
        from habluetooth import BluetoothManager, set_manager
        import bleak_esphome
        import bleak_retry_connector

        class Manager(BluetoothManager):
            def _discover_service_info(self, service_info):
                pass
        with Peer('--peripheral', HEALTH) as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                manager = Manager()
                set_manager(manager)
                await manager.async_setup()
                cli = await connected(proxy.port)
                info = await cli.device_info()
                data = bleak_esphome.connect_scanner(cli, info, True)
                unsetup = data.scanner.async_setup()
                unregister = manager.async_register_scanner(data.scanner)
                device = None
                for _ in range(150):
                    device = manager.async_ble_device_from_address('F0:F1:F2:F3:F4:01', True)
                    if device:
                        break
                    await asyncio.sleep(0.1)
                self.assertIsNotNone(device, 'the proxy\'s scanner saw the device')
                # After the manager's setup, as in HA: its wrapper routes the device to its scanner.
                client = await bleak_retry_connector.establish_connection(
                    bleak_retry_connector.BleakClientWithServiceCache, device, 'Health-1', max_attempts=2)
                try:
                    self.assertEqual(bytes(await client.read_gatt_char('00002a24-0000-1000-8000-00805f9b34fb')), b'bumble-peer')
                    got = asyncio.Queue()
                    await client.start_notify('00002a37-0000-1000-8000-00805f9b34fb', lambda c, d: got.put_nowait(bytes(d)))
                    value = await asyncio.wait_for(got.get(), 10)
                    self.assertEqual(value[:2], bytes([0x16, 72]))
                    await client.stop_notify('00002a37-0000-1000-8000-00805f9b34fb')
                    echo = '68636967-6174-7400-8000-00805f9b0002'
                    await client.write_gatt_char(echo, b'from bleak', response=True)
                    self.assertEqual(bytes(await client.read_gatt_char(echo)), b'from bleak')
                finally:
                    await client.disconnect()
                unregister()
                unsetup()
                await cli.disconnect()
                manager.async_stop()
            run(go(), timeout=120)

    def test_five_connections_at_once(self):
        names = [f'Dev-{i},address=F0:F1:F2:F3:F5:0{i},gatt=health' for i in range(1, 6)]
        args = [a for n in names for a in ('--peripheral', n)]
        with Peer(*args) as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                client = await connected(proxy.port)
                addresses = [0xF0F1F2F3F500 + i for i in range(1, 6)]
                results = await asyncio.gather(*(connect_device(client, a) for a in addresses))
                self.assertEqual([(r[0], r[2]) for r in results], [(True, 0)] * 5, results)
                reads = []
                for a in addresses:
                    services = await client.bluetooth_gatt_get_services(a)
                    reads.append(client.bluetooth_gatt_read(a, characteristic(services, 0x2A24).handle))
                self.assertEqual([bytes(v) for v in await asyncio.gather(*reads)], [b'bumble-peer'] * 5)
                # The sixth slot does not exist: refused at once, the others untouched.
                await client.disconnect()
            run(go(), timeout=120)

    def test_a_device_that_drops_the_link_mid_read(self):
        # The device drops the link when it gets its 12th ATT request (after discovery):
        # the read fails, the client hears the link went with the peer's reason, the slot
        # is free again.
        with Peer('--peripheral', HEALTH, '--disconnect-at-att', '12') as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                client = await connected(proxy.port)
                ok, _, error, states = await connect_device(client, HEALTH_ADDRESS)
                self.assertEqual((ok, error), (True, 0))
                services = await client.bluetooth_gatt_get_services(HEALTH_ADDRESS)
                model = characteristic(services, 0x2A24)
                failed = None
                for _ in range(5):
                    try:
                        await client.bluetooth_gatt_read(HEALTH_ADDRESS, model.handle, timeout=10)
                    except Exception as e:  # noqa: BLE001
                        failed = e
                        break
                self.assertIsNotNone(failed, 'a read failed when the link dropped')
                for _ in range(50):
                    if len(states) > 1:
                        break
                    await asyncio.sleep(0.1)
                self.assertEqual(states[-1][0], False, states)
                self.assertNotEqual(states[-1][2], 0, 'the reason the link went')
                ok, _, error, _ = await connect_device(client, HEALTH_ADDRESS)
                self.assertTrue(ok, 'the slot came back')
                await client.disconnect()
            run(go(), timeout=120)

    def test_a_read_that_needs_encryption_pairs_and_succeeds(self):
        # Insufficient Encryption from the device: the proxy pairs (Just Works) and reads again.
        with tempfile.TemporaryDirectory() as bonds, Peer('--peripheral', HEALTH) as peer, \
                Proxy(peer, '--key', KEY, '--bond-dir', bonds) as proxy:
            async def go():
                client = await connected(proxy.port)
                ok, _, _, _ = await connect_device(client, HEALTH_ADDRESS)
                self.assertTrue(ok)
                services = await client.bluetooth_gatt_get_services(HEALTH_ADDRESS)
                secret = next(c for s in services.services for c in s.characteristics
                              if c.uuid == '68636967-6174-7400-8000-00805f9b0003')
                self.assertEqual(bytes(await client.bluetooth_gatt_read(HEALTH_ADDRESS, secret.handle)), b'secret')
                await client.disconnect()
            run(go(), timeout=120)

    def test_slots_learnt_from_a_controller_that_is_full(self):
        # The controller takes two links; the third connect is refused with Connection Limit
        # Exceeded: the proxy tells HA it has two slots from then on.
        names = [f'Dev-{i},address=F0:F1:F2:F3:F5:0{i},gatt=health' for i in range(1, 4)]
        args = [a for n in names for a in ('--peripheral', n)]
        with Peer(*args, '--max-links', '2') as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                client = await connected(proxy.port)
                slots = []
                client.subscribe_bluetooth_connections_free(lambda free, limit, allocated: slots.append((free, limit)))
                for a in (0xF0F1F2F3F501, 0xF0F1F2F3F502):
                    ok, _, error, _ = await connect_device(client, a)
                    self.assertEqual((ok, error), (True, 0))
                ok, _, error, _ = await connect_device(client, 0xF0F1F2F3F503)
                self.assertFalse(ok)
                for _ in range(30):
                    if slots and slots[-1] == (0, 2):
                        break
                    await asyncio.sleep(0.1)
                self.assertEqual(slots[-1], (0, 2), slots)
                await client.disconnect()
            run(go(), timeout=120)
            proxy.wait_for(lambda e: e.get('event') == 'slots' and e['slots'] == 2)

    def test_writes_without_response_keep_their_order(self):
        # 40 writes without response, then a read: the device holds the last one written.
        with Peer('--peripheral', HEALTH) as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                client = await connected(proxy.port)
                ok, _, _, _ = await connect_device(client, HEALTH_ADDRESS)
                services = await client.bluetooth_gatt_get_services(HEALTH_ADDRESS)
                echo = next(c for s in services.services for c in s.characteristics if c.uuid == '68636967-6174-7400-8000-00805f9b0002')
                for i in range(40):
                    await client.bluetooth_gatt_write(HEALTH_ADDRESS, echo.handle, f'chunk {i:02d}'.encode(), False)
                self.assertEqual(bytes(await client.bluetooth_gatt_read(HEALTH_ADDRESS, echo.handle)), b'chunk 39')
                await client.disconnect()
            run(go(), timeout=90)

    def test_idle_sockets_do_not_keep_home_assistant_out(self):
        import socket as socketlib
        with Peer('--peripheral', THERMO) as peer, Proxy(peer, '--key', KEY) as proxy:
            idle = [socketlib.create_connection(('127.0.0.1', proxy.port)) for _ in range(20)]
            try:
                async def go():
                    client = await connected(proxy.port)
                    self.assertTrue((await client.device_info()).name)
                    await client.disconnect()
                run(go())
            finally:
                for s in idle:
                    s.close()

    def test_scanning_goes_on_while_connecting_and_connected(self):
        with Peer('--peripheral', HEALTH, '--peripheral', HEART) as peer, Proxy(peer, '--key', KEY) as proxy:
            async def go():
                client = await connected(proxy.port)
                heard = []
                client.subscribe_bluetooth_le_raw_advertisements(
                    lambda m: heard.extend((time.monotonic(), a.address) for a in m.advertisements))
                await asyncio.sleep(2)
                started = time.monotonic()
                ok, _, _, _ = await connect_device(client, HEALTH_ADDRESS)
                self.assertTrue(ok)
                up = time.monotonic()
                await asyncio.sleep(3)
                during = [a for t, a in heard if started <= t <= up]
                after = [a for t, a in heard if t > up]
                self.assertIn(HEART_ADDRESS, after, 'the other device still heard with a link up')
                if up - started > 0.5:
                    self.assertTrue(during, 'advertisements while connecting')
                await client.disconnect()
            run(go(), timeout=90)

    def test_a_vanished_controller_ends_the_proxy_with_the_reason(self):
        # The controller's TCP connection is dropped under it: the clients are told
        # goodbye and the proxy exits non-zero, saying why (a supervisor restarts it).
        with Peer('--peripheral', THERMO, '--close-after', '3') as peer:
            proxy = Proxy(peer, '--key', KEY)
            async def go():
                client = await connected(proxy.port)
                await client.device_info()
                for _ in range(100):
                    if proxy.proc.poll() is not None:
                        break
                    await asyncio.sleep(0.1)
            run(go())
            code = proxy.proc.wait(timeout=15)
            text = ''.join(proxy.text)
            proxy.stop()
            self.assertEqual(code, 1, text)
            self.assertRegex(text, r'(?i)(controller|transport|closed|scan)')

    def test_usage_errors(self):
        for args, words in [(['--key', 'short'], '--key takes 32 bytes'),
                            (['--key', KEY, '--key-file', '/x'], 'not both'),
                            (['--insecure-plaintext', '--key', KEY], 'without a key'),
                            (['--listen', '::1:6053'], 'brackets'),
                            (['--listen', '70000'], 'PORT 0 to 65535'),
                            (['--name', 'Not A Name'], '--name takes'),
                            (['extra'], 'no arguments'),
                            (['--passkey', '123456'], 'ADDR=NNNNNN'),
                            (['--passkey', 'F0:F1:F2:F3:F4:01=12345'], 'ADDR=NNNNNN'),
                            (['--slots', '0'], '--slots takes')]:
            p = subprocess.run([HCIGATT, 'proxy', '--transport', 'tcp:127.0.0.1:1', '--state-dir', '/nonexistent/x', *args],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, f'{args}: {p.stderr}')
            self.assertIn(words, p.stderr, args)
        # A typo stops the run before any state is made (a key made then would never be shown).
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.run([HCIGATT, 'proxy', '--transport', 'tcp:127.0.0.1:1', '--state-dir', tmp + '/s', '--slots', '99'],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2)
            self.assertFalse(os.path.exists(tmp + '/s'), 'no state made')
        p = subprocess.run([HCIGATT, 'proxy', '--transport', 'tcp:127.0.0.1:1', '--key-file', '/nonexistent/key'],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn('no such file', p.stderr)


if __name__ == '__main__':
    unittest.main()
