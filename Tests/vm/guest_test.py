#!/usr/bin/env python3
"""hcigatt against the real kernel's Bluetooth sockets. Runs INSIDE the test VM (as root;
Tests/vm/run-tests boots it): vhci_world.py gives the kernel two adapters, hci0 and hci1,
on one virtual link with a GATT peripheral; the tests run hcigatt (built on the host)
over the HCI user channel (user:hci0) and over the kernel's own host and L2CAP ATT
socket (l2cap:hci1). The tests share one world and run in order (test_1_..., test_2_...):
one VM boot costs ~15 s and starting Bumble under emulation ~25 s.
"""
import fcntl
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HCIGATT = os.environ.get('HCIGATT', os.path.join(ROOT, '.build', 'debug', 'hcigatt'))
WORLD = os.path.join(HERE, 'vhci_world.py')

PERIPHERAL = 'VM-Thermo'
PERIPHERAL_ADDRESS = 'F0:F1:F2:F3:F4:01'
ADAPTERS = {0: 'C0:FF:EE:00:00:01', 1: 'C0:FF:EE:00:00:02'}
NOBODY = 65534
SECRET = '68636967-6174-7400-8000-00805F9B0003'  # needs an encrypted link (gatt_db.py)

# <linux/bluetooth/hci.h>: HCIDEVUP = _IOW('H', 201, int). (Numbers, not socket.AF_BLUETOOTH:
# a Python built without the Bluetooth headers lacks the constants.)
AF_BLUETOOTH = 31
BTPROTO_HCI = 1
HCIDEVUP = 0x400448C9

world = None
WORLD_LOG = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'vhci_world.log')
# Bonds hcigatt makes in the guest go where it can write (the root share is read-only).
os.environ.setdefault('HCIGATT_BOND_DIR', os.path.join(os.environ.get('TMPDIR', '/tmp'), 'hcigatt-bonds'))


def hcigatt(*args, timeout=120, user=None):
    """Runs hcigatt; returns (exit code, stdout, stderr). user: run as that uid (and gid),
    which drops every capability."""
    extra = {}
    if user is not None:
        extra = dict(user=user, group=user, extra_groups=[])
    p = subprocess.run([HCIGATT, *args], capture_output=True, text=True, timeout=timeout, **extra)
    sys.stderr.write(f'\n$ hcigatt {" ".join(args)}{" (uid %d)" % user if user is not None else ""}'
                     f' -> {p.returncode}\n{p.stderr}')
    return p.returncode, p.stdout, p.stderr


def adapter_rows():
    rc, out, err = hcigatt('list')
    if rc != 0:
        raise AssertionError(f'hcigatt list failed ({rc}): {err}')
    rows = {}
    for line in out.splitlines()[1:]:
        fields = line.split(None, 4)
        rows[fields[0]] = fields
    return rows


def bring_up(index):
    """HCIDEVUP, the way bluetoothd powers an adapter on; EALREADY means it is up."""
    s = socket.socket(AF_BLUETOOTH, socket.SOCK_RAW, BTPROTO_HCI)
    try:
        fcntl.ioctl(s.fileno(), HCIDEVUP, index)
    except OSError as e:
        if e.errno != 114:  # EALREADY
            raise
    finally:
        s.close()


def read(path):
    with open(path) as f:
        return f.read()


def setUpModule():
    global world
    with open(WORLD_LOG, 'w') as log:
        world = subprocess.Popen([sys.executable, WORLD, '--controllers', '2',
                                  '--peripheral', f'{PERIPHERAL},service=1809,gatt=health'],
                                 stdout=subprocess.PIPE, stderr=log, text=True)
    started = time.monotonic()
    ready = select.select([world.stdout], [], [], 180)[0]
    line = world.stdout.readline() if ready else ''
    if not line:
        world.kill()
        raise RuntimeError(f'vhci_world did not start: {read(WORLD_LOG)}')
    info = json.loads(line)
    sys.stderr.write(f'vhci_world ready after {time.monotonic() - started:.1f} s: {line}')
    got = {c['index']: c['address'] for c in info['controllers']}
    if got != ADAPTERS:
        raise RuntimeError(f'unexpected adapters: {got}')


def tearDownModule():
    if world is not None:
        world.send_signal(signal.SIGTERM)
        try:
            world.wait(timeout=10)
        except subprocess.TimeoutExpired:
            world.kill()
        world.stdout.close()
        sys.stderr.write(read(WORLD_LOG))


class RealKernel(unittest.TestCase):
    gatt_over_user_channel = None

    def test_1_list_shows_the_vhci_adapters(self):
        # The kernel powers a new adapter on for its setup and off again 2 s later (no
        # bluetoothd); wait for both to settle down, with the user channel free.
        deadline = time.monotonic() + 20
        while True:
            rows = adapter_rows()
            if all(rows.get(f'hci{i}', [''] * 5)[2:5:2] == ['down', 'free'] for i in ADAPTERS) \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.assertEqual(sorted(rows), ['hci0', 'hci1'])
        for index, address in ADAPTERS.items():
            self.assertEqual(rows[f'hci{index}'], [f'hci{index}', address, 'down', 'virtual', 'free'])

    def test_2_scan_over_the_user_channel_finds_the_peripheral(self):
        rc, out, err = hcigatt('scan', '--transport', 'user:hci0', '--duration', '3', '--json')
        self.assertEqual(rc, 0, err)
        records = [json.loads(line) for line in out.splitlines() if line.strip()]
        found = [r for r in records if r.get('name') == PERIPHERAL]
        self.assertEqual(len(found), 1, out)
        self.assertEqual(found[0]['address'], PERIPHERAL_ADDRESS)
        self.assertEqual(found[0]['address_type'], 'public')
        self.assertEqual(found[0]['services'], ['1809'])
        self.assertIn('via user:hci0', err)

    def test_3_gatt_over_the_user_channel(self):
        rc, out, err = hcigatt('gatt', PERIPHERAL_ADDRESS, '--transport', 'user:hci0', '--json')
        self.assertEqual(rc, 0, err)
        db = json.loads(out)
        self.assertEqual(db['mtu'], 517)
        self.assertEqual(len(db['services']), 9)
        by_uuid = {c['uuid']: c for s in db['services'] for c in s['characteristics']}
        self.assertEqual(by_uuid['2A00']['value']['text'], PERIPHERAL)
        self.assertEqual(by_uuid['2A29']['value']['text'], 'hcigatt-test')
        # The characteristic that needs encryption: hcigatt's own host paired (Just Works,
        # LE Secure Connections) over the user channel and read it.
        self.assertEqual(by_uuid[SECRET]['value']['text'], 'secret')
        self.assertIn('security is encrypted, 16-byte key, LE Secure Connections', err)
        RealKernel.gatt_over_user_channel = db

    def test_4_subscribe_over_the_user_channel(self):
        rc, out, err = hcigatt('subscribe', PERIPHERAL_ADDRESS, '2a1c', '2a37', '--count', '6',
                               '--json', '--transport', 'user:hci0')
        self.assertEqual(rc, 0, err)
        lines = [json.loads(line) for line in out.splitlines() if line.strip()]
        values = [v for v in lines if v['kind'] != 'link']
        self.assertEqual(len(values), 6)
        # The link's line: the vhci controllers run the data length and PHY procedures.
        links = [v['link'] for v in lines if v['kind'] == 'link']
        self.assertEqual(len(links), 1, out)
        self.assertEqual((links[0]['tx_phy'], links[0]['max_tx_octets']), ('LE 2M', 251), links)
        kinds = {(v['uuid'], v['kind']) for v in values}
        self.assertIn(('2A1C', 'indication'), kinds)
        self.assertIn(('2A37', 'notification'), kinds)
        temp = next(v for v in values if v['uuid'] == '2A1C')
        self.assertTrue(temp['hex'].startswith('066c0100ff'), temp)  # flags 06, FLOAT 36.4

    def test_5_gatt_over_the_kernel_l2cap_socket(self):
        # hci1 is down: the L2CAP transport brings it up (HCIDEVUP) and the kernel's own
        # host makes the LE link; hcigatt speaks ATT on the socket.
        rc, out, err = hcigatt('gatt', PERIPHERAL_ADDRESS, '--transport', 'l2cap:hci1', '--json')
        self.assertEqual(rc, 0, err)
        db = json.loads(out)
        self.assertEqual(db['mtu'], 517)
        mine = self.gatt_over_user_channel
        self.assertIsNotNone(mine, 'test_3 (gatt over user:hci0) did not pass')

        def layout(d):
            return [(s['start_handle'], s['end_handle'], s['uuid'],
                     [(c['declaration_handle'], c['value_handle'], c['uuid'],
                       c.get('value') if c['uuid'] != SECRET else None,  # only our host paired
                       [(x['handle'], x['uuid']) for x in c['descriptors']])
                      for c in s['characteristics']]) for s in d['services']]
        self.assertEqual(layout(db), layout(mine))
        self.assertEqual(adapter_rows()['hci1'][2], 'up')
        # The characteristic that needs encryption: hcigatt raised BT_SECURITY, and this
        # kernel, with the adapter brought up by HCIDEVUP and no bluetoothd, has no SMP for
        # it (EINVAL): the dump says why and keeps the value's own ATT error.
        self.assertIn('raising security to medium (encrypted)', err)
        self.assertIn('the kernel cannot encrypt this link (EINVAL: no SMP on hci1)', err)
        secret = [c for s in db['services'] for c in s['characteristics'] if c['uuid'] == SECRET]
        self.assertEqual(len(secret), 1)
        self.assertIn('Insufficient Encryption', secret[0]['read_error'])

    def test_6_user_channel_refused_while_the_kernel_has_the_adapter_up(self):
        bring_up(1)
        rc, out, err = hcigatt('info', '--transport', 'user:hci1')
        self.assertEqual(rc, 1, out)
        self.assertIn("user:hci1: hci1 is up: the kernel's Bluetooth host (bluetoothd) is using it, "
                      "and the user channel needs it down. Pass hcigatt's --bring-down option", err)
        # A link the kernel still holds when --bring-down takes the adapter (here one whose
        # security raise failed, as in test_5): HCIDEVDOWN drops it only in the kernel;
        # hcigatt's HCI Reset ends it in the controller and frees the peripheral.
        rc, out, err = hcigatt('read', PERIPHERAL_ADDRESS, SECRET, '--transport', 'l2cap:hci1')
        self.assertEqual(rc, 1, out)
        self.assertIn('the kernel cannot encrypt this link (EINVAL: no SMP on hci1)', err)
        rc, out, err = hcigatt('info', '--transport', 'user:hci1', '--bring-down')
        self.assertEqual(rc, 0, err)
        self.assertIn(f'Address         {ADAPTERS[1]}', out)
        self.assertEqual(adapter_rows()['hci1'][2], 'down')
        # The peripheral the dropped link went to takes a new connection (test_9 follows
        # it over the kernel's socket too). Its own bond directory: the bond test_3 made
        # belongs to hci0's address, which the peripheral knows, not hci1's.
        rc, out, err = hcigatt('read', PERIPHERAL_ADDRESS, '2a00', '--transport', 'user:hci1', '--bond-dir',
                               os.path.join(os.environ.get('TMPDIR', '/tmp'), 'hci1-bonds'))
        self.assertEqual(rc, 0, err)
        self.assertIn(PERIPHERAL, out)

    def test_7_without_cap_net_admin_the_messages_say_so(self):
        rc, out, err = hcigatt('info', '--transport', 'user:hci0', user=NOBODY)
        self.assertEqual(rc, 1, out)
        self.assertIn('user:hci0: the HCI user channel needs CAP_NET_ADMIN: run as root or '
                      '`sudo setcap cap_net_admin+ep` on the hcigatt binary', err)
        # The L2CAP transport needs it too, to bring a down adapter up.
        rc, out, err = hcigatt('gatt', PERIPHERAL_ADDRESS, '--transport', 'l2cap:hci0', user=NOBODY)
        self.assertEqual(rc, 1, out)
        self.assertIn('hci0 is down and bringing it up needs CAP_NET_ADMIN', err)

    def test_8_serve_over_the_user_channel_read_by_the_kernels_att_socket(self):
        # Our peripheral on hci0 (user channel); the kernel's host on hci1 connects as
        # central and hcigatt's client speaks ATT on the kernel's L2CAP socket to our server.
        log = open(os.path.join(os.environ.get('TMPDIR', '/tmp'), 'serve.log'), 'w+')
        serve = subprocess.Popen([HCIGATT, 'serve', '--transport', 'user:hci0', '--profile', 'thermometer,battery',
                                  '--name', 'VM-Serve', '--json'], stdout=subprocess.PIPE, stderr=log, text=True)
        events = []
        try:
            line = serve.stdout.readline() if select.select([serve.stdout], [], [], 60)[0] else ''
            self.assertIn('"advertising"', line, read(log.name))
            rc, out, err = hcigatt('gatt', ADAPTERS[0], '--transport', 'l2cap:hci1', '--json')
            self.assertEqual(rc, 0, err)
            db = json.loads(out)
            self.assertEqual([s['uuid'] for s in db['services']], ['1800', '1801', '1809', '180F'])
            by_uuid = {c['uuid']: c for s in db['services'] for c in s['characteristics']}
            self.assertEqual(by_uuid['2A00']['value']['text'], 'VM-Serve')
            self.assertEqual(by_uuid['2A19']['value']['hex'], '64')
            self.assertEqual(by_uuid['2A1D']['value']['hex'], '02')
            self.assertEqual(len(by_uuid['2B2A']['value']['hex']), 32)
            rc, out, err = hcigatt('write', ADAPTERS[0], '2a21', '0500', '--transport', 'l2cap:hci1')
            self.assertEqual(rc, 0, err)
        finally:
            serve.send_signal(signal.SIGINT)
            try:
                out, _ = serve.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                serve.kill()
                out, _ = serve.communicate()
            events = [json.loads(l) for l in out.splitlines() if l.strip()]
            log.close()
            sys.stderr.write(f'\nserve: {events}\n{read(log.name)}')
        kinds = [e['event'] for e in events]
        self.assertIn('connected', kinds)
        self.assertIn({'event': 'write', 'uuid': '2A21', 'value': '0500'},
                      [{k: e[k] for k in ('event', 'uuid', 'value')} for e in events if e['event'] == 'write'])
        self.assertEqual(serve.returncode, 0)

    def test_9_gateway_follows_a_device_over_the_kernels_l2cap_socket(self):
        # The gateway where bluetoothd would own the controller: --device by address over
        # l2cap:hci1 (the kernel's host makes the link), readings to a Mosquitto in the guest.
        sys.path.insert(0, os.path.join(ROOT, 'Tests', 'integration'))
        from mqtt_broker import Broker, Subscriber
        loopback_up()
        spool = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'gateway-spool')
        log = open(os.path.join(os.environ.get('TMPDIR', '/tmp'), 'gateway.log'), 'w+')
        with Broker() as broker, Subscriber(broker, 'hcigatt/#') as sub:
            gateway = subprocess.Popen([HCIGATT, 'gateway', '--transport', 'l2cap:hci1', '--mqtt', broker.uri,
                                        '--device', PERIPHERAL_ADDRESS, '--spool', spool, '--gateway-id', 'vm'],
                                       stdout=subprocess.DEVNULL, stderr=log, text=True)
            try:
                sub.wait_for(lambda s: len(s.readings('hcigatt/vm/F0F1F2F3F401/')) >= 3, timeout=120,
                             what='readings over the kernel\'s L2CAP socket')
                self.assertIsNone(gateway.poll(), read(log.name))
            finally:
                gateway.send_signal(signal.SIGTERM)
                try:
                    gateway.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    gateway.kill()
                    gateway.wait()
                log.close()
                sys.stderr.write(f'\ngateway:\n{read(log.name)}')
            err = read(log.name)
            self.assertEqual(gateway.returncode, 0, err)
            self.assertIn('via l2cap:hci1', err)
            seqs = sorted({j['seq'] for _, j in sub.readings('hcigatt/vm/F0F1F2F3F401/')})
            self.assertEqual(seqs, list(range(1, seqs[-1] + 1)), 'contiguous from 1')


def loopback_up():
    """`ip link set lo up` (SIOCSIFFLAGS; the guest has no ip tool): the broker listens there."""
    import struct
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack('16sH14x', fcntl.ioctl(s, siocgifflags, struct.pack('16sH14x', b'lo', 0)))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack('16sH14x', b'lo', flags | iff_up))


if __name__ == '__main__':
    unittest.main(verbosity=2)
