"""hcigatt gateway against Bumble advertisers and peripherals and real Mosquitto brokers:
readings decoded with seq and time, nothing lost across broker and gateway restarts, the
spool's bound, Home Assistant discovery and the last will, TLS and authentication, and a
fleet of two gateways on bridged brokers."""
import calendar
import hashlib
import json
import os
import sys
import re
import signal
import subprocess
import tempfile
import time
import unittest

from mqtt_broker import Broker, Subscriber
from peer import HCIGATT, PYTHON, Peer
from test_l2cap import Proc

KEY = '231d39c1d7cc1ab1aee224cd096db932'
ISO = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$')


class Gateway:
    """An `hcigatt gateway` process; stop() ends it with SIGTERM and returns its stderr."""

    def __init__(self, peer, broker_uri, *args, spool=None, gateway_id='gw1', port=None, env=None):
        self.spool = spool or tempfile.mkdtemp(prefix='hcigatt-spool-')
        self.log = tempfile.TemporaryFile(mode='w+')
        transport = f'tcp:127.0.0.1:{port or peer.port}'
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([HCIGATT, 'gateway', '--transport', transport, '--mqtt', broker_uri,
                                      '--spool', self.spool, '--gateway-id', gateway_id, *args],
                                     stdout=subprocess.DEVNULL, stderr=self.log, text=True, env=e)

    def stderr(self):
        self.log.seek(0)
        return self.log.read()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f'gateway did not stop on {sig}: {self.stderr()}')
        return self.stderr()

    def wait(self, timeout=30):
        self.proc.wait(timeout=timeout)
        return self.proc.returncode, self.stderr()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if exc[0] is not None:
            # What the gateway said, beside the failure it ended in.
            print(f'--- gateway stderr ---\n{self.stderr()}', file=sys.stderr)


def seqs(readings):
    return [j['seq'] for _, j in readings]


class Contiguous:
    def assert_contiguous(self, readings, what, in_order=True):
        """Every number from the first to the last arrived; `in_order`: each for the first
        time after the one before it (repeats of one already seen are allowed: at least once)."""
        s = sorted(set(seqs(readings)))
        self.assertTrue(s, f'no {what} readings')
        self.assertEqual(s, list(range(s[0], s[-1] + 1)), f'{what}: missing seq numbers')
        if in_order:
            first_arrivals = []
            seen = set()
            for n in seqs(readings):
                if n not in seen:
                    seen.add(n)
                    first_arrivals.append(n)
            self.assertEqual(first_arrivals, s, f'{what}: out of order')
        return s


class GatewayTests(Contiguous, unittest.TestCase):
    def test_broadcast_readings_arrive_decoded(self):
        sensors = ['Home-1,sensor=bthome', 'Ruuvi-2,sensor=ruuvi', 'Enc-3,sensor=bthome-enc', 'Pvvx-4,sensor=pvvx']
        with Broker() as broker, Peer(*sum((['--peripheral', s] for s in sensors), [])) as peer, \
                Subscriber(broker, 'hcigatt/#') as sub:
            with Gateway(peer, broker.uri, '--scan', '--bindkey', f'F0:F1:F2:F3:F4:03={KEY}') as gw:
                sub.wait_for(lambda s: all(len(s.readings(f'F0F1F2F3F40{i}/')) >= 3 for i in range(1, 5)),
                             what='three readings of each sensor')
                err = gw.stop()
            self.assertIn('gateway stopped', err)
            for i, measurement in [(1, 'bthome'), (2, 'ruuvi'), (3, 'bthome'), (4, 'pvvx')]:
                readings = sub.readings(f'hcigatt/gw1/F0F1F2F3F40{i}/{measurement}')
                self.assertGreaterEqual(len(readings), 3, f'{measurement} of device {i}')
                s = self.assert_contiguous(readings, measurement)
                self.assertEqual(s[0], 1, 'a new device starts at seq 1')
                for _, j in readings:
                    self.assertEqual(j['device'], f'F0:F1:F2:F3:F4:0{i}')
                    self.assertEqual(j['gateway'], 'gw1')
                    self.assertRegex(j['time'], ISO)
                    self.assertIsInstance(j['rssi'], int)
                    self.assertEqual(j['measurement'], measurement)
                    # Reading n of the advertiser: 20.00 + n/100 °C (sensor_frames.py).
                    n = j.get('packet_id', j.get('counter', j.get('measurement_sequence')))
                    self.assertIsNotNone(n, j)
                    self.assertAlmostEqual(j['temperature'], 20 + n / 100, places=3, msg=j)
                    self.assertAlmostEqual(j['humidity'], 40 + n % 50, places=3, msg=j)
            enc = sub.readings('F0F1F2F3F403/bthome')[0][1]
            self.assertTrue(enc['encrypted'])
            self.assertEqual(enc['counter'], enc['packet_id'])
            ruuvi = sub.readings('F0F1F2F3F402/ruuvi')[0][1]
            self.assertEqual((ruuvi['pressure'], ruuvi['voltage'], ruuvi['tx_power']), (1000.0, 3.0, 4))
            # Repeated broadcasts of one reading are one message: every packet id once.
            ids = [j['packet_id'] for _, j in sub.readings('F0F1F2F3F401/bthome')]
            self.assertEqual(len(ids), len(set(ids)), f'a reading published twice: {ids}')

    def test_encrypted_without_the_key_is_not_published(self):
        with Broker() as broker, Peer('--peripheral', 'Enc-1,sensor=bthome-enc,sensor_interval=0.2') as peer, \
                Subscriber(broker, 'hcigatt/#') as sub:
            with Gateway(peer, broker.uri, '--scan') as gw:
                time.sleep(3)
                err = gw.stop()
            self.assertIn('no bind key', err)
            self.assertEqual(sub.readings('F0F1F2F3F401'), [])

    def test_connected_measurements(self):
        # By name, beside the scan for broadcast readings (the controller scans once at a time).
        with Broker() as broker, Peer('--peripheral', 'Thermo-1,service=1809,gatt=health',
                                      '--peripheral', 'Home-2,sensor=bthome') as peer, \
                Subscriber(broker, 'hcigatt/#', 'homeassistant/#') as sub:
            # A device that is off (never heard) holds up neither the others nor a stop.
            with Gateway(peer, broker.uri, '--device', 'Nobody', '--device', 'Thermo-1', '--scan') as gw:
                sub.wait_for(lambda s: len(s.readings('temperature_measurement')) >= 3
                             and len(s.readings('F0F1F2F3F402/bthome')) >= 3, what='temperature measurements and broadcasts')
                started = time.monotonic()
                err = gw.stop()
                self.assertLess(time.monotonic() - started, 10, err)
            self.assertIn('looking for "Nobody"', err)
            self.assertIn('gateway stopped', err)
            # seq counts the device's readings, of every measurement it has.
            self.assert_contiguous(sub.readings('hcigatt/gw1/F0F1F2F3F401/'), 'the device\'s')
            readings = sub.readings('hcigatt/gw1/F0F1F2F3F401/temperature_measurement')
            j = readings[0][1]
            self.assertEqual((j['uuid'], j['characteristic'], j['unit']), ('2A1C', 'Temperature Measurement', '°C'))
            self.assertIsInstance(j['temperature'], float)
            self.assertRegex(j['time'], ISO)
            configs = {t: json.loads(p) for t, p in sub.snapshot() if t.startswith('homeassistant/') and p}
            temp = configs['homeassistant/sensor/hcigatt_F0F1F2F3F401/temperature_measurement_temperature/config']
            self.assertEqual((temp['device_class'], temp['unit_of_measurement']), ('temperature', '°C'))
            self.assertEqual(temp['state_topic'], 'hcigatt/+/F0F1F2F3F401/temperature_measurement')
            self.assertEqual(temp['device']['name'], 'Thermo-1')
            heart = configs['homeassistant/sensor/hcigatt_F0F1F2F3F401/heart_rate_measurement_heart_rate/config']
            self.assertEqual(heart['unit_of_measurement'], 'bpm')

    def test_device_only_runs_until_stopped(self):
        # The common case for health devices: --device without --scan. It used to stop by
        # itself (exit 0) about 3 s after start: the scan that found the device ended, and
        # its end ended the gateway. Each way of naming the device, on a peer of its own.
        # 'thermo': a contained name, taken when no exact one comes within 2 s.
        for target in ['F0:F1:F2:F3:F4:01', 'F0:F1:F2:F3:F4:01/public', 'Thermo-1', 'thermo']:
            with self.subTest(device=target), Broker() as broker, \
                    Peer('--peripheral', 'Thermo-1,service=1809,gatt=health') as peer, \
                    Subscriber(broker, 'hcigatt/#') as sub:
                with Gateway(peer, broker.uri, '--device', target) as gw:
                    started = time.monotonic()
                    sub.wait_for(lambda s: len(s.readings('temperature_measurement')) >= 3, what='measurements')
                    # Well past the 3 s it used to last, and still publishing.
                    time.sleep(max(0.0, 8 - (time.monotonic() - started)))
                    self.assertIsNone(gw.proc.poll(), f'the gateway ended by itself:\n{gw.stderr()}')
                    before = len(sub.readings('temperature_measurement'))
                    sub.wait_for(lambda s: len(s.readings('temperature_measurement')) >= before + 3,
                                 what='measurements after 8 s')
                    err = gw.stop()
                self.assertEqual(gw.proc.returncode, 0, err)
                self.assertIn('gateway stopped', err)
                if '/' not in target:
                    self.assertIn('looking for', err)
                s = self.assert_contiguous(sub.readings('hcigatt/gw1/F0F1F2F3F401/'), 'the device\'s')
                self.assertEqual(s[0], 1)

    def test_broker_outage_loses_nothing(self):
        self.outage()

    def test_broker_outage_loses_nothing_mqtt5(self):
        # MQTT 5: clean start off and a session expiry, or the session ends with the link.
        self.outage('--mqtt5')

    def outage(self, *args):
        with Broker(persistent=True) as broker, \
                Peer('--peripheral', 'Home-1,sensor=bthome,sensor_interval=0.25') as peer, \
                Subscriber(broker, 'hcigatt/+/+/bthome', client_id='outage-check') as sub:
            with Gateway(peer, broker.uri, '--scan', *args) as gw:
                sub.wait_for(lambda s: len(s.readings()) >= 5, what='readings before the outage')
                broker.stop()
                down = time.time()
                time.sleep(5)
                up = time.time()
                broker.start()
                before = len(sub.readings())
                sub.wait_for(lambda s: len(s.readings()) >= before + 25, timeout=40, what='readings after the outage')
                err = gw.stop()
            readings = sub.readings()
            s = self.assert_contiguous(readings, 'bthome')
            self.assertEqual(s[0], 1)
            during = [j for _, j in readings if down + 0.5 < iso_seconds(j['time']) < up - 0.5]
            self.assertGreaterEqual(len(during), 10, f'readings measured during the outage: {len(during)}\n{err}')
            self.assertIn('lost', err)

    def test_gateway_restart_while_broker_is_down(self):
        with Broker(persistent=True) as broker, \
                Peer('--peripheral', 'Home-1,sensor=bthome,sensor_interval=0.25') as peer, \
                Subscriber(broker, 'hcigatt/+/+/bthome', client_id='restart-check') as sub:
            spool = tempfile.mkdtemp(prefix='hcigatt-spool-')
            with Gateway(peer, broker.uri, '--scan', spool=spool) as gw:
                sub.wait_for(lambda s: len(s.readings()) >= 3, what='first readings')
                broker.stop()
                time.sleep(3)
                err = gw.stop()
            self.assertRegex(err, r'\d+ kept in the spool')
            kept = int(re.search(r'(\d+) kept in the spool', err).group(1))
            self.assertGreaterEqual(kept, 5)
            # A second gateway process, still without a broker, then the broker comes back.
            with Gateway(peer, broker.uri, '--scan', spool=spool) as gw:
                time.sleep(2)
                broker.start()
                before = len(sub.readings())
                sub.wait_for(lambda s: len(s.readings()) >= before + kept + 10, timeout=40, what='spooled readings')
                gw.stop()
            s = self.assert_contiguous(sub.readings(), 'bthome')
            self.assertEqual(s[0], 1, 'numbers go on across the restart, none repeated or missing')

    def test_spool_full_drops_the_oldest_and_says_so(self):
        with Broker(persistent=True) as broker, \
                Peer('--peripheral', 'Home-1,sensor=bthome,sensor_interval=0.02') as peer, \
                Subscriber(broker, 'hcigatt/#', client_id='spool-check') as sub:
            broker.stop()
            with Gateway(peer, broker.uri, '--scan', '--spool-max', '16K') as gw:
                time.sleep(8)
                broker.start()
                sub.wait_for(lambda s: any(t.endswith('/dropped') for t, _ in s.snapshot()), timeout=30,
                             what='the dropped count')
                time.sleep(2)
                err = gw.stop()
            self.assertRegex(err, r'spool full \(16384 bytes\): dropped the \d+ oldest')
            notices = [json.loads(p) for t, p in sub.snapshot() if t == 'hcigatt/gw1/dropped']
            self.assertTrue(notices)
            self.assertGreater(notices[0]['dropped_total'], 0)
            s = sorted(set(seqs(sub.readings('/bthome'))))
            self.assertGreater(s[0], 1, 'the oldest readings went first')
            self.assertEqual(s, list(range(s[0], s[-1] + 1)), 'after the dropped ones, none missing')
            dropped = int(re.search(r'(\d+) dropped \(spool full\)', err).group(1))
            self.assertEqual(notices[-1]['dropped_total'], dropped)
            # The dropped ones are exactly the oldest: 1 up to the first delivered.
            self.assertEqual(dropped, s[0] - 1, f'dropped {dropped}, first delivered {s[0]}')

    def test_home_assistant_discovery_and_last_will(self):
        with Broker() as broker, Peer('--peripheral', 'Home-1,sensor=bthome') as peer:
            with Gateway(peer, broker.uri, '--scan') as gw:
                with Subscriber(broker, 'hcigatt/#') as live:
                    live.wait_for(lambda s: len(s.readings()) >= 2, what='readings')
                # Retained: a subscriber that comes later gets the configs and the status.
                with Subscriber(broker, 'homeassistant/#', 'hcigatt/gw1/status') as late:
                    wanted = ['homeassistant/sensor/hcigatt_F0F1F2F3F401/bthome_temperature/config',
                              'homeassistant/binary_sensor/hcigatt_gateway_gw1/status/config']
                    late.wait_for(lambda s: all(w in [t for t, _ in s.snapshot()] for w in wanted)
                                  and ('hcigatt/gw1/status', 'online') in s.snapshot(), what='retained discovery configs')
                    configs = {t: json.loads(p) for t, p in late.snapshot() if t.endswith('/config')}
                    self.assertIn(('hcigatt/gw1/status', 'online'), late.snapshot())
                    n = len(late.snapshot())
                    # Home Assistant restarting: every config comes again.
                    subprocess.run(['mosquitto_pub', '-p', str(broker.port), '-t', 'homeassistant/status', '-m', 'online'],
                                   check=True)
                    late.wait_for(lambda s: len([t for t, _ in s.snapshot()[n:] if t.endswith('/config')]) >= len(configs),
                                  what='configs sent again')
                temperature = configs['homeassistant/sensor/hcigatt_F0F1F2F3F401/bthome_temperature/config']
                self.assertEqual(temperature['unique_id'], 'hcigatt_F0F1F2F3F401_bthome_temperature')
                self.assertEqual(temperature['state_topic'], 'hcigatt/+/F0F1F2F3F401/bthome')
                self.assertEqual(temperature['value_template'], '{{ value_json.temperature }}')
                self.assertEqual((temperature['device_class'], temperature['unit_of_measurement'], temperature['state_class']),
                                 ('temperature', '°C', 'measurement'))
                device = temperature['device']
                self.assertEqual(device['identifiers'], ['hcigatt_F0F1F2F3F401'])
                self.assertEqual(device['via_device'], 'hcigatt_gateway_gw1')
                self.assertEqual(device['name'], 'Home-1')
                self.assertIn('manufacturer', device)
                self.assertIn('model', device)
                gateway = configs['homeassistant/binary_sensor/hcigatt_gateway_gw1/status/config']
                self.assertEqual(gateway['state_topic'], 'hcigatt/gw1/status')
                self.assertNotIn('homeassistant/binary_sensor/hcigatt_F0F1F2F3F401/bthome_encrypted/config', configs)
                # Killed without a word: the broker publishes the last will.
                with Subscriber(broker, 'hcigatt/gw1/status') as status:
                    status.wait_for(lambda s: ('hcigatt/gw1/status', 'online') in s.snapshot(), what='online')
                    gw.proc.send_signal(signal.SIGKILL)
                    gw.proc.wait()
                    status.wait_for(lambda s: ('hcigatt/gw1/status', 'offline') in s.snapshot(), timeout=90,
                                    what='the last will')

    def test_a_broker_that_forgets_gets_discovery_and_status_again(self):
        # A broker without persistence loses retained messages and sessions when it restarts.
        with Broker(persistent=False) as broker, Peer('--peripheral', 'Home-1,sensor=bthome') as peer:
            with Gateway(peer, broker.uri, '--scan') as gw:
                with Subscriber(broker, 'hcigatt/#') as live:
                    live.wait_for(lambda s: len(s.readings()) >= 2, what='readings')
                broker.stop()
                time.sleep(2)
                broker.start()
                with Subscriber(broker, 'homeassistant/#', 'hcigatt/#') as late:
                    late.wait_for(lambda s: ('hcigatt/gw1/status', 'online') in s.snapshot()
                                  and any(t.endswith('bthome_temperature/config') for t, _ in s.snapshot())
                                  and len(s.readings()) >= 2, timeout=40,
                                  what='status, discovery and readings after the restart')
                    seq_after = [j['seq'] for _, j in late.readings()]
                gw.stop()
            self.assertGreater(min(seq_after), 2, 'numbers go on after the restart')

    def test_clean_stop_says_offline(self):
        with Broker() as broker, Peer('--peripheral', 'Home-1,sensor=bthome') as peer, \
                Subscriber(broker, 'hcigatt/gw1/status') as status:
            with Gateway(peer, broker.uri, '--scan') as gw:
                status.wait_for(lambda s: ('hcigatt/gw1/status', 'online') in s.snapshot(), what='online')
                gw.stop(signal.SIGINT)
            status.wait_for(lambda s: ('hcigatt/gw1/status', 'offline') in s.snapshot(), what='offline')
            self.assertEqual(gw.proc.returncode, 0)
            # Said by the gateway, then a clean DISCONNECT (not the will of a lost link).
            self.assertIn('Received DISCONNECT from hcigatt-gw1', broker.log())

    def test_tls_and_authentication(self):
        with tempfile.TemporaryDirectory() as d:
            make_certificates(d)
            passwords = os.path.join(d, 'passwords')
            subprocess.run(['mosquitto_passwd', '-b', '-c', passwords, 'sensor', 's3cret'], check=True,
                           capture_output=True)
            os.chmod(passwords, 0o644)
            tls_port = free_tls_port()
            extra = (f'listener {tls_port} 127.0.0.1\ncafile {d}/ca.pem\ncertfile {d}/server.pem\n'
                     f'keyfile {d}/server.key\n')
            with Broker(extra=extra, anonymous=False, password_file=passwords) as broker, \
                    Peer('--peripheral', 'Home-1,sensor=bthome') as peer, \
                    Subscriber(broker, 'hcigatt/#', extra=['-u', 'sensor', '-P', 's3cret']) as sub:
                credentials = os.path.join(d, 'credentials')
                with open(credentials, 'w') as f:
                    f.write('sensor\ns3cret\n')
                uri = f'mqtts://localhost:{tls_port}'
                with Gateway(peer, uri, '--scan', '--ca-file', f'{d}/ca.pem', '--credentials', credentials) as gw:
                    sub.wait_for(lambda s: len(s.readings()) >= 2, what='readings over TLS')
                    gw.stop()
                # A wrong password: refused, said so, exit 1 (no endless retrying).
                with open(credentials, 'w') as f:
                    f.write('sensor\nwrong\n')
                with Gateway(peer, uri, '--scan', '--ca-file', f'{d}/ca.pem', '--credentials', credentials) as gw:
                    rc, err = gw.wait(timeout=30)
                self.assertEqual(rc, 1, err)
                self.assertIn('refused the credentials', err)
                # The environment instead of a file.
                with Gateway(peer, uri, '--scan', '--ca-file', f'{d}/ca.pem',
                             env={'HCIGATT_MQTT_USERNAME': 'sensor', 'HCIGATT_MQTT_PASSWORD': 's3cret'}) as gw:
                    n = len(sub.readings())
                    sub.wait_for(lambda s: len(s.readings()) >= n + 2, what='readings with credentials from the environment')
                    gw.stop()
                # A broker certificate from a CA not trusted: no connection, readings spooled.
                with Gateway(peer, uri, '--scan', '--credentials', credentials) as gw:
                    time.sleep(4)
                    err = gw.stop()
                self.assertIn('cannot connect', err)
                self.assertRegex(err, r'\d+ kept in the spool')

    def test_tls_names_pins_and_no_check_without_a_ca(self):
        # The attack: with --no-hostname-check (which an IP-literal broker used to force)
        # and the system's CAs, any publicly trusted certificate for any name was taken, so
        # a man in the middle with one could take the commands. Now: an IP literal is
        # checked against the certificate's IP names; --no-hostname-check needs --ca-file
        # or --pin-sha256; a pin accepts that one certificate, whoever signed it.
        with tempfile.TemporaryDirectory() as d:
            make_certificates(d)
            make_server_certificate(d, 'other', 'DNS:other.example')
            named, other = free_tls_port(), free_tls_port()
            extra = (f'listener {named} 127.0.0.1\ncafile {d}/ca.pem\ncertfile {d}/server.pem\nkeyfile {d}/server.key\n'
                     f'listener {other} 127.0.0.1\ncafile {d}/ca.pem\ncertfile {d}/other.pem\nkeyfile {d}/other.key\n')
            with Broker(extra=extra) as broker, Peer('--peripheral', 'Home-1,sensor=bthome') as peer, \
                    Subscriber(broker, 'hcigatt/#') as sub:
                def refused(uri, *args):
                    with Gateway(peer, uri, '--scan', *args) as gw:
                        time.sleep(3)
                        return gw.stop()
                # A certificate for another name, from a trusted CA: refused by name and by IP.
                err = refused(f'mqtts://localhost:{other}', '--ca-file', f'{d}/ca.pem')
                self.assertIn('not for this host name', err)
                err = refused(f'mqtts://127.0.0.1:{other}', '--ca-file', f'{d}/ca.pem')
                self.assertIn('names no IP address 127.0.0.1', err)
                # No check without a CA of our own or a pin: a usage error.
                with Gateway(peer, f'mqtts://127.0.0.1:{other}', '--scan', '--no-hostname-check') as gw:
                    rc, err = gw.wait(timeout=30)
                self.assertEqual(rc, 2, err)
                self.assertIn('--no-hostname-check with the system\'s CAs would take any public certificate', err)
                # Pinned: that certificate, whatever its name and signer (no --ca-file).
                der = subprocess.run(['openssl', 'x509', '-in', f'{d}/other.pem', '-outform', 'DER'],
                                     check=True, capture_output=True).stdout
                pin = hashlib.sha256(der).hexdigest()
                with Gateway(peer, f'mqtts://127.0.0.1:{other}', '--scan', '--pin-sha256', pin) as gw:
                    sub.wait_for(lambda s: len(s.readings()) >= 2, what='readings to the pinned broker')
                    gw.stop()
                err = refused(f'mqtts://localhost:{named}', '--pin-sha256', pin)
                self.assertIn('not the pinned one', err)
                self.assertRegex(err, r'\d+ kept in the spool')

    def test_tls_client_certificate(self):
        # A broker that wants a client certificate (mosquitto's require_certificate): an RSA
        # certificate with its key in another file, an EC (P-256) one with the key in the
        # same file, and none at all (the handshake fails, said so, readings spooled).
        with tempfile.TemporaryDirectory() as d:
            make_certificates(d)
            make_client_certificates(d)
            tls_port = free_tls_port()
            extra = (f'listener {tls_port} 127.0.0.1\ncafile {d}/ca.pem\ncertfile {d}/server.pem\n'
                     f'keyfile {d}/server.key\nrequire_certificate true\nuse_identity_as_username true\n')
            with Broker(extra=extra) as broker, \
                    Peer('--peripheral', 'Home-1,sensor=bthome') as peer, \
                    Subscriber(broker, 'hcigatt/#') as sub:
                uri = f'mqtts://localhost:{tls_port}'
                with Gateway(peer, uri, '--scan', '--ca-file', f'{d}/ca.pem', '--cert-file', f'{d}/client-rsa.pem',
                             '--key-file', f'{d}/client-rsa.key') as gw:
                    sub.wait_for(lambda s: len(s.readings()) >= 2, what='readings with an RSA client certificate')
                    gw.stop()
                # The broker's address as an IP literal: checked against the certificate's
                # IP names (it has IP:127.0.0.1), no need to turn the check off.
                ip_uri = f'mqtts://127.0.0.1:{tls_port}'
                with Gateway(peer, ip_uri, '--scan', '--ca-file', f'{d}/ca.pem', '--cert-file', f'{d}/client-ec.pem') as gw:
                    n = len(sub.readings())
                    sub.wait_for(lambda s: len(s.readings()) >= n + 2, what='readings with an EC client certificate')
                    gw.stop()
                with Gateway(peer, uri, '--scan', '--ca-file', f'{d}/ca.pem') as gw:
                    time.sleep(4)
                    err = gw.stop()
                self.assertIn('cannot connect', err)
                self.assertIn('client certificate (--cert-file)', err)
                self.assertRegex(err, r'\d+ kept in the spool')

    def test_bridged_fleet(self):
        # Brokers A and B each bridge everything to C; a gateway on each of two controllers
        # that hear the same two sensors.
        with Broker() as central:
            bridge = (f'connection to-central\naddress 127.0.0.1:{central.port}\ntopic # out 1\n'
                      'cleansession false\nrestart_timeout 1\n')
            with Broker(extra=bridge) as a, Broker(extra=bridge.replace('to-central', 'to-central-b')) as b, \
                    Peer('--hosts', '2', '--peripheral', 'Home-1,sensor=bthome', '--peripheral', 'Ruuvi-2,sensor=ruuvi') as peer, \
                    Subscriber(central, '#') as sub:
                with Gateway(peer, a.uri, '--scan', gateway_id='kitchen', port=peer.ready['ports'][0]) as g1, \
                        Gateway(peer, b.uri, '--scan', gateway_id='garage', port=peer.ready['ports'][1]) as g2:
                    sub.wait_for(lambda s: all(len(s.readings(f'hcigatt/{g}/F0F1F2F3F40{i}/')) >= 3
                                               for g in ('kitchen', 'garage') for i in (1, 2)),
                                 timeout=40, what='both gateways\' readings of both sensors')
                    g1.stop()
                    g2.stop()
                configs = {}
                for t, p in sub.snapshot():
                    if t.startswith('homeassistant/') and t.endswith('/config'):
                        configs.setdefault(t, set()).add(json.loads(p)['unique_id'])
                temperature = [t for t in configs if t.endswith('_temperature/config')]
                self.assertEqual(sorted(temperature), ['homeassistant/sensor/hcigatt_F0F1F2F3F401/bthome_temperature/config',
                                                       'homeassistant/sensor/hcigatt_F0F1F2F3F402/ruuvi_temperature/config'])
                for g in ('kitchen', 'garage'):
                    self.assertIn(f'homeassistant/binary_sensor/hcigatt_gateway_{g}/status/config', configs)
                for _, j in sub.readings('/F0F1F2F3F401/'):
                    self.assertIn(j['gateway'], ('kitchen', 'garage'))


class GatewayMatrixTests(Contiguous, unittest.TestCase):
    """The ways a user starts the gateway that the tests above do not, each against real
    Mosquitto and Bumble (or hcigatt) peers, each checked for readings with contiguous seq."""

    def test_theengs_topic_style(self):
        with Broker() as broker, Peer('--peripheral', 'Home-1,sensor=bthome') as peer, \
                Subscriber(broker, 'home/#') as sub:
            with Gateway(peer, broker.uri, '--scan', '--topic-style', 'theengs') as gw:
                sub.wait_for(lambda s: len(s.readings('home/gw1/BTtoMQTT/F0F1F2F3F401')) >= 3, what='readings, Theengs style')
                err = gw.stop()
            readings = sub.readings('home/gw1/BTtoMQTT/F0F1F2F3F401')
            self.assert_contiguous(readings, 'bthome', in_order=True)
            for _, j in readings:
                self.assertEqual(j['tempc'], j['temperature'], j)
                self.assertEqual(j['hum'], j['humidity'], j)
            self.assertIn('gateway stopped', err)

    def test_config_file_and_the_command_line_winning(self):
        # Everything from the file but the transport; --gateway-id given both ways.
        with Broker() as broker, Peer('--peripheral', 'Thermo-1,service=1809,gatt=health') as peer, \
                Subscriber(broker, 'hcigatt/#') as sub, tempfile.TemporaryDirectory() as d:
            config = os.path.join(d, 'gateway.conf')
            with open(config, 'w') as f:
                f.write(f'# the gateway of the kitchen\nmqtt {broker.uri}\ndevice Thermo-1\n'
                        f'spool {d}/spool\ngateway-id from-file\nno-discovery\n\n')
            log = tempfile.TemporaryFile(mode='w+')
            proc = subprocess.Popen([HCIGATT, 'gateway', '--config', config, '--transport', f'tcp:127.0.0.1:{peer.port}',
                                     '--gateway-id', 'kitchen'], stdout=subprocess.DEVNULL, stderr=log, text=True)
            try:
                sub.wait_for(lambda s: len(s.readings('hcigatt/kitchen/F0F1F2F3F401/')) >= 3, what='readings from --config')
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=20)
            log.seek(0)
            err = log.read()
            self.assertEqual(proc.returncode, 0, err)
            self.assertEqual(sub.readings('hcigatt/from-file/'), [], 'the command line wins')
            self.assertFalse([t for t, _ in sub.snapshot() if t.startswith('homeassistant/')], 'no-discovery from the file')
            self.assert_contiguous(sub.readings('hcigatt/kitchen/F0F1F2F3F401/'), 'the device\'s')
            self.assertTrue(os.path.isdir(os.path.join(d, 'spool')), err)

    def test_two_devices_one_never_appears_without_scan(self):
        # Without --scan: one device by name, one by a typed address that is never there
        # (so no scan looks for it: its connects time out and are retried for ever).
        with Broker() as broker, Peer('--peripheral', 'Thermo-1,service=1809,gatt=health') as peer, \
                Subscriber(broker, 'hcigatt/#') as sub:
            with Gateway(peer, broker.uri, '--device', 'AA:BB:CC:DD:EE:FF/public', '--device', 'Thermo-1',
                         '--connect-timeout', '1') as gw:
                sub.wait_for(lambda s: len(s.readings('temperature_measurement')) >= 3, what='measurements')
                time.sleep(4)
                self.assertIsNone(gw.proc.poll(), f'the gateway ended by itself:\n{gw.stderr()}')
                before = len(sub.readings('F0F1F2F3F401'))
                sub.wait_for(lambda s: len(s.readings('F0F1F2F3F401')) > before, what='readings go on')
                err = gw.stop()
            self.assertEqual(gw.proc.returncode, 0, err)
            self.assertIn('AA:BB:CC:DD:EE:FF', err)
            self.assertEqual(sub.readings('AABBCCDDEEFF'), [])
            self.assert_contiguous(sub.readings('hcigatt/gw1/F0F1F2F3F401/'), 'the device\'s')

    def test_device_only_mqtt5(self):
        with Broker() as broker, Peer('--peripheral', 'Thermo-1,service=1809,gatt=health') as peer, \
                Subscriber(broker, 'hcigatt/#') as sub:
            with Gateway(peer, broker.uri, '--device', 'F0:F1:F2:F3:F4:01', '--mqtt5') as gw:
                sub.wait_for(lambda s: len(s.readings('temperature_measurement')) >= 3, what='measurements over MQTT 5')
                err = gw.stop()
            self.assertEqual(gw.proc.returncode, 0, err)
            s = self.assert_contiguous(sub.readings('hcigatt/gw1/F0F1F2F3F401/'), 'the device\'s')
            self.assertEqual(s[0], 1)

    def test_a_device_that_needs_pairing_bonded_before(self):
        # hcigatt serve as the device: every value needs an encrypted link. `hcigatt pair`
        # bonds first; the gateway's link is encrypted with that bond at once.
        world = Peer('--hosts', '2')
        device_port, gateway_port = world.ready['ports']
        bonds = tempfile.mkdtemp(prefix='hcigatt-gw-bonds-')
        with world, Broker() as broker, Subscriber(broker, 'hcigatt/#') as sub:
            server = Proc('serve', '--profile', 'thermometer', '--name', 'Locked-1', '--security', 'encrypted',
                          '--transport', f'tcp:127.0.0.1:{device_port}')
            try:
                self.assertIsNotNone(server.wait_for(server.lines, lambda l: l.startswith('advertising')), server.stderr)
                p = subprocess.run([HCIGATT, 'pair', 'Locked-1', '--transport', f'tcp:127.0.0.1:{gateway_port}',
                                    '--bond-dir', bonds], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn('bonded', p.stdout)
                with Gateway(world, broker.uri, '--device', 'Locked-1', '--bond-dir', bonds, port=gateway_port) as gw:
                    sub.wait_for(lambda s: len(s.readings('temperature_measurement')) >= 2, timeout=40,
                                 what='measurements from the device that needs encryption')
                    err = gw.stop()
                self.assertIn('encrypted with the stored bond', err)
                self.assertNotIn('pairing', err.replace('pairing first if needed', ''))
                self.assert_contiguous(sub.readings('hcigatt/gw1/'), 'the device\'s')
            finally:
                server.stop()


class GatewayScanTests(Contiguous, unittest.TestCase):
    """What --scan publishes: every advertiser or only sensors and beacons, allow and deny
    lists, presence with its away timeout (across a restart), and the rate limit."""
    PEERS = ['Home-1,sensor=bthome', 'Ruuvi-2,sensor=ruuvi', 'Phone-3,mfr=004C:1005AABB', 'B4,sensor=ibeacon',
             'E5,sensor=eddystone']

    @staticmethod
    def devices(sub):
        return {t.split('/')[2] for t, _ in sub.readings()}

    def test_only_sensors_beacons_allow_and_deny(self):
        with Broker() as broker, Peer(*sum((['--peripheral', s] for s in self.PEERS), [])) as peer:
            with Subscriber(broker, 'hcigatt/#', 'homeassistant/#') as sub:
                with Gateway(peer, broker.uri, '--scan', '--only-sensors', '--deny', 'F0:F1:F2:F3:F4:02') as gw:
                    sub.wait_for(lambda s: len(s.readings('F0F1F2F3F401/bthome')) >= 2
                                 and len(s.readings('F0F1F2F3F404/ibeacon')) >= 2
                                 and len(s.readings('F0F1F2F3F405/eddystone_tlm')) >= 2, what='sensor and beacon readings')
                    time.sleep(1)
                    gw.stop()
                # Denied (Ruuvi) and not a sensor (the phone): nothing, not even discovery.
                self.assertEqual(self.devices(sub), {'F0F1F2F3F401', 'F0F1F2F3F404', 'F0F1F2F3F405'})
                self.assertFalse([t for t, _ in sub.snapshot() if 'F0F1F2F3F402' in t or 'F0F1F2F3F403' in t])
                for device in ['F0F1F2F3F401', 'F0F1F2F3F404', 'F0F1F2F3F405']:
                    self.assert_contiguous(sub.readings(device), device)
                for _, j in sub.readings('F0F1F2F3F404/ibeacon'):
                    self.assertEqual((j['proximity_uuid'], j['major'], j['measured_power']),
                                     ('E2C56DB5-DFFB-48D2-B060-D0F5A71096E0', 1, -59))
                minors = [j['minor'] for _, j in sub.readings('F0F1F2F3F404/ibeacon')]
                self.assertEqual(len(minors), len(set(minors)), f'an iBeacon frame published twice: {minors}')
                for _, j in sub.readings('F0F1F2F3F405/eddystone_tlm'):
                    n = j['advertising_pdu_count']
                    self.assertEqual(j['battery_voltage_mv'], 3000)
                    self.assertAlmostEqual(j['temperature_c'], 20 + (n & 0xFF) / 256, places=3)
                topics = [t for t, _ in sub.snapshot()]
                self.assertIn('homeassistant/sensor/hcigatt_F0F1F2F3F405/eddystone_tlm_temperature_c/config', topics)

            # Every advertiser, narrowed to a name prefix and BTHome's service.
            with Subscriber(broker, 'hcigatt/gw2/#', 'homeassistant/+/hcigatt_F0F1F2F3F403/#') as sub:
                with Gateway(peer, broker.uri, '--scan', '--allow', 'Phone', '--allow', 'service:FCD2', gateway_id='gw2') as gw:
                    sub.wait_for(lambda s: s.readings('F0F1F2F3F403/advertisement') and len(s.readings('F0F1F2F3F401/bthome')) >= 2,
                                 what='the phone and the BTHome sensor')
                    time.sleep(2)
                    gw.stop()
                self.assertEqual(self.devices(sub), {'F0F1F2F3F401', 'F0F1F2F3F403'})
                phone = sub.readings('F0F1F2F3F403/advertisement')
                # Its data never changes: one reading, however often it is heard.
                self.assertEqual(len(phone), 1, phone)
                j = phone[0][1]
                self.assertEqual((j['name'], j['address_type'], j['connectable']), ('Phone-3', 'public', True))
                self.assertEqual(j['manufacturer']['company_id'], {'value': 76, 'name': 'Apple, Inc.'})
                self.assertEqual(j['manufacturer']['data'], '1005aabb')
                self.assertIsInstance(j['rssi'], int)
                # An advertiser gets no Home Assistant entities.
                self.assertFalse([t for t, _ in sub.snapshot() if t.startswith('homeassistant/')])

    def test_presence_away_and_across_a_restart(self):
        peers = ['Home-1,sensor=bthome', 'Gone-2,sensor=bthome,silent_after=20']
        spool = tempfile.mkdtemp(prefix='hcigatt-spool-')
        with Broker() as broker, Peer(*sum((['--peripheral', s] for s in peers), [])) as peer, \
                Subscriber(broker, 'hcigatt/gw1/+/presence', 'homeassistant/device_tracker/#') as sub:
            def states(device):
                return [p for t, p in sub.snapshot() if t == f'hcigatt/gw1/{device}/presence']

            with Gateway(peer, broker.uri, '--scan', '--presence', '--away-timeout', '8', spool=spool) as gw:
                sub.wait_for(lambda s: states('F0F1F2F3F401') and states('F0F1F2F3F402'), what='both present')
                gw.stop()
            self.assertEqual((states('F0F1F2F3F401'), states('F0F1F2F3F402')), (['present'], ['present']))
            tracker = json.loads(dict(sub.snapshot())['homeassistant/device_tracker/hcigatt_F0F1F2F3F401/presence_gw1/config'])
            self.assertEqual((tracker['state_topic'], tracker['payload_home'], tracker['payload_not_home'], tracker['source_type']),
                             ('hcigatt/gw1/F0F1F2F3F401/presence', 'present', 'away', 'bluetooth_le'))
            self.assertEqual(tracker['availability_topic'], 'hcigatt/gw1/status')
            self.assertEqual(tracker['device']['identifiers'], ['hcigatt_F0F1F2F3F401'])
            # Gone-2 leaves while the gateway is down: the next run says it is away after
            # the timeout (it remembers who was present), and Home-1 never goes away.
            self.assertIsNotNone(peer.events.wait_for(lambda e: e.get('event') == 'silent' and e.get('name') == 'Gone-2', 30),
                                 'Gone-2 did not go silent')
            with Gateway(peer, broker.uri, '--scan', '--presence', '--away-timeout', '8', spool=spool) as gw:
                started = time.monotonic()
                sub.wait_for(lambda s: 'away' in states('F0F1F2F3F402'), timeout=30, what='Gone-2 away')
                self.assertGreaterEqual(time.monotonic() - started, 7, 'away before the timeout')
                time.sleep(2)
                gw.stop()
            self.assertNotIn('away', states('F0F1F2F3F401'))
            # Retained: what a newcomer sees.
            with Subscriber(broker, 'hcigatt/gw1/+/presence') as late:
                late.wait_for(lambda s: len(s.snapshot()) >= 3, what='retained presence')
                retained = {t: p for t, p in late.snapshot() if t.endswith('/presence')}
            self.assertEqual(retained, {'hcigatt/gw1/F0F1F2F3F401/presence': 'present',
                                        'hcigatt/gw1/F0F1F2F3F402/presence': 'away'})
            # Started again without --presence: what it said is cleared, trackers too.
            with Gateway(peer, broker.uri, '--scan', spool=spool) as gw:
                sub.wait_for(lambda s: states('F0F1F2F3F401')[-1:] == [''], what='the presence topic cleared')
                err = gw.stop()
            self.assertIn('presence is off: cleared', err)
            self.assertEqual(dict(sub.snapshot())['homeassistant/device_tracker/hcigatt_F0F1F2F3F401/presence_gw1/config'], '')
            with Subscriber(broker, 'hcigatt/gw1/+/presence', 'homeassistant/device_tracker/#') as late:
                time.sleep(2)
                self.assertEqual([m for m in late.snapshot() if m[0] != late.probe], [])

    def test_min_interval_keeps_the_latest_value(self):
        with Broker() as broker, Peer('--peripheral', 'Home-1,sensor=bthome,sensor_interval=0.2') as peer, \
                Subscriber(broker, 'hcigatt/#') as sub:
            with Gateway(peer, broker.uri, '--scan', '--only-sensors', '--min-interval', '2') as gw:
                sub.wait_for(lambda s: len(s.readings('F0F1F2F3F401/bthome')) >= 5, timeout=30, what='five readings')
                gw.stop()
            readings = sub.readings('F0F1F2F3F401/bthome')
            self.assert_contiguous(readings, 'bthome')
            ids = [j['packet_id'] for _, j in readings]
            times = [iso_seconds(j['time']) for _, j in readings]
            # About one per 2 s (the peer sends five a second): never close to all of them.
            self.assertLessEqual(len(readings), (times[-1] - times[0]) / 2 + 2, f'more than one per interval: {times}')
            # The latest value wins: several frames go by per interval; the first held one
            # would be the very next packet id every time. The last reading is the one held
            # when the gateway stopped (flushed at once), which may follow the one before
            # by a single frame: it is left out.
            steps = [(b - a) % 256 for a, b in zip(ids[1:-1], ids[2:-1])]
            self.assertTrue(all(step >= 2 for step in steps) and max(steps) >= 4, f'not the latest value: packet ids {ids}')


class GatewayCommandTests(unittest.TestCase):
    """Commands from MQTT (--commands): reads and writes on a followed Bumble device, each id
    executed once, and every refusal the sender can get."""

    THERMO = 'Thermo-1,service=1809,gatt=health'
    ECHO = '68636967-6174-7400-8000-00805F9B0002'
    SECRET = '68636967-6174-7400-8000-00805F9B0003'
    DEVICE = 'F0F1F2F3F401'

    @staticmethod
    def send(broker, payload, device=DEVICE, retain=False):
        args = ['mosquitto_pub', '-p', str(broker.port), '-h', '127.0.0.1', '-q', '1',
                '-t', f'hcigatt/gw1/{device}/command', '-m', payload]
        subprocess.run(args + (['-r'] if retain else []), check=True, timeout=10)

    @staticmethod
    def replies(sub):
        out = {}
        for t, p in sub.snapshot():
            if t.endswith('/reply'):
                j = json.loads(p)
                out.setdefault(j['id'], []).append((t, j))
        return out

    @staticmethod
    def online(sub):
        """The gateway said "online": it subscribed to its commands before that."""
        sub.wait_for(lambda s: ('hcigatt/gw1/status', 'online') in s.snapshot(), what='the gateway online')

    def reply(self, sub, id, what=None):
        sub.wait_for(lambda s: id in self.replies(s), timeout=40, what=what or f'the reply to {id}')
        return self.replies(sub)[id][0][1]

    def test_reads_and_writes_each_id_once(self):
        with Broker() as broker, Peer('--peripheral', self.THERMO) as peer, \
                Subscriber(broker, 'hcigatt/gw1/+/reply', 'hcigatt/gw1/status') as sub:
            with Gateway(peer, broker.uri, '--device', 'Thermo-1', '--commands', 'write', '--commands-insecure',
                         '--commands-allow', f'{self.ECHO},2A21') as gw:
                # Sent once the gateway is online: the command waits for the link (the device
                # found, connected, its database discovered).
                self.online(sub)
                self.send(broker, '{"id": "r1", "op": "read", "uuid": "2A19"}')
                r1 = self.reply(sub, 'r1')
                self.assertEqual((r1['ok'], r1['hex'], r1['uuid']), (True, '5a', '2A19'), r1)
                self.assertIn('decoded', r1)
                self.assertIn(90, r1['decoded'].values(), r1)
                self.assertEqual(self.replies(sub)['r1'][0][0], f'hcigatt/gw1/{self.DEVICE}/reply')
                self.send(broker, json.dumps({'id': 'w1', 'op': 'write', 'uuid': self.ECHO, 'text': 'hello'}))
                self.assertEqual(self.reply(sub, 'w1')['ok'], True)
                self.send(broker, json.dumps({'id': 'r2', 'op': 'read', 'uuid': self.ECHO}))
                self.assertEqual(self.reply(sub, 'r2')['hex'], b'hello'.hex())
                # The same id again (a redelivery): answered again, not written again.
                self.send(broker, json.dumps({'id': 'w1', 'op': 'write', 'uuid': self.ECHO, 'text': 'again'}))
                sub.wait_for(lambda s: len(self.replies(s).get('w1', [])) == 2, what='the second answer to w1')
                self.assertEqual(self.replies(sub)['w1'][1][1], self.replies(sub)['w1'][0][1])
                self.send(broker, json.dumps({'id': 'r3', 'op': 'read', 'uuid': self.ECHO}))
                self.assertEqual(self.reply(sub, 'r3')['hex'], b'hello'.hex(), 'w1 was not executed twice')
                # Without response, by handle.
                handle = self.reply(sub, 'r3')['handle']
                self.send(broker, json.dumps({'id': 7, 'op': 'write-without-response', 'handle': handle, 'hex': '010203'}))
                self.assertEqual(self.reply(sub, '7')['ok'], True)
                self.send(broker, json.dumps({'id': 'r4', 'op': 'read', 'handle': handle}))
                self.assertEqual(self.reply(sub, 'r4')['hex'], '010203')
                # Refusals: the device's ATT error named; bad commands; a device not followed.
                self.send(broker, '{"id": "w3", "op": "write", "uuid": "2A21", "hex": "0000"}')
                w3 = self.reply(sub, 'w3')
                self.assertFalse(w3['ok'])
                self.assertIn('Out of Range', w3['error'])
                self.send(broker, '{"id": "x1", "op": "delete", "uuid": "2A19"}')
                self.assertIn('unknown op "delete"', self.reply(sub, 'x1')['error'])
                self.send(broker, '{"id": "x2", "op": "read", "uuid": "2A99"}')
                self.assertIn('has no characteristic', self.reply(sub, 'x2')['error'])
                self.send(broker, '{"id": "x3", "op": "write", "uuid": "2A19"}')
                self.assertIn('a write needs "hex" or "text"', self.reply(sub, 'x3')['error'])
                self.send(broker, '{"op": "read", "uuid": "2A19"')
                sub.wait_for(lambda s: None in self.replies(s), what='the reply to a payload that is not JSON')
                self.assertIn('not a JSON object', self.replies(sub)[None][0][1]['error'])
                self.send(broker, '{"id": "x4", "op": "read", "uuid": "2A19"}', device='AABBCCDDEEFF')
                x4 = self.reply(sub, 'x4')
                self.assertIn('not allowed', x4['error'])
                self.assertEqual(self.replies(sub)['x4'][0][0], 'hcigatt/gw1/AABBCCDDEEFF/reply')
                self.assertIsNone(gw.proc.poll(), gw.stderr())
                err = gw.stop()
            self.assertEqual(gw.proc.returncode, 0, err)

    def test_home_assistant_controls_send_commands(self):
        # With --commands write, a followed device's Measurement Interval is a Home Assistant
        # number whose command template (rendered here by Jinja2, as Home Assistant does,
        # with the float it sends) makes a command the gateway executes.
        with Broker() as broker, Peer('--peripheral', self.THERMO) as peer, \
                Subscriber(broker, 'hcigatt/gw1/+/reply', 'hcigatt/gw1/status', 'homeassistant/number/#') as sub:
            with Gateway(peer, broker.uri, '--device', 'Thermo-1', '--commands', 'write', '--commands-insecure',
                         '--commands-allow', '2A21', '--commands-allow', '2A06'):
                topic = f'homeassistant/number/hcigatt_{self.DEVICE}/measurement_interval_gw1/config'
                sub.wait_for(lambda s: topic in dict(s.snapshot()), what='the number config')
                config = json.loads(dict(sub.snapshot())[topic])
                self.assertEqual(config['command_topic'], f'hcigatt/gw1/{self.DEVICE}/command')
                self.assertEqual((config['min'], config['unit_of_measurement'], config['availability_topic']),
                                 (1, 's', 'hcigatt/gw1/status'))
                render = ('import datetime, jinja2, sys\n'
                          'print(jinja2.Environment().from_string(sys.argv[1]).render(value=float(sys.argv[2]), '
                          'now=datetime.datetime.now))')
                for value in ('30.0', '7.0'):
                    command = subprocess.run([PYTHON, '-c', render, config['command_template'], value], check=True,
                                             capture_output=True, text=True).stdout.strip()
                    id = json.loads(command)['id']
                    subprocess.run(['mosquitto_pub', '-p', str(broker.port), '-q', '1', '-t', config['command_topic'],
                                    '-m', command], check=True, timeout=10)
                    self.assertEqual(self.reply(sub, id)['ok'], True, command)
                self.send(broker, '{"id": "check", "op": "read", "uuid": "2A21"}')
                # 7 s, little-endian: the second press was not taken as a repeat of the first.
                self.assertEqual(self.reply(sub, 'check')['hex'], '0700')

    def test_read_only_refuses_writes(self):
        with Broker() as broker, Peer('--peripheral', self.THERMO) as peer, \
                Subscriber(broker, 'hcigatt/gw1/+/reply', 'hcigatt/gw1/status') as sub:
            with Gateway(peer, broker.uri, '--device', 'F0:F1:F2:F3:F4:01', '--commands', 'read') as gw:
                self.online(sub)
                self.send(broker, json.dumps({'id': 'w', 'op': 'write', 'uuid': self.ECHO, 'text': 'no'}))
                self.assertIn('reads only', self.reply(sub, 'w')['error'])
                self.send(broker, json.dumps({'id': 'r', 'op': 'read', 'uuid': self.ECHO}))
                self.assertEqual(self.reply(sub, 'r')['hex'], b'echo'.hex())
                gw.stop()

    def test_writes_go_only_to_what_is_named_and_never_to_a_cccd(self):
        # The attack: with --commands write anyone who can publish wrote any characteristic,
        # the gateway's own CCCDs and a RACP included. Now nothing unless named, each
        # refusal saying how to allow it, and the insecure broker said on stderr.
        with Broker() as broker, Peer('--peripheral', self.THERMO) as peer, \
                Subscriber(broker, 'hcigatt/gw1/+/reply', 'hcigatt/gw1/status') as sub:
            with Gateway(peer, broker.uri, '--device', 'F0:F1:F2:F3:F4:01', '--commands', 'write', '--commands-insecure') as gw:
                self.online(sub)
                self.send(broker, '{"id": "w", "op": "write", "uuid": "2A21", "hex": "0500"}')
                w = self.reply(sub, 'w')
                self.assertFalse(w['ok'])
                self.assertIn('writes to 2A21 (Measurement Interval) are not allowed on this gateway', w['error'])
                self.assertIn('add --commands-allow 2A21', w['error'])
                self.send(broker, '{"id": "b", "op": "read", "uuid": "2A19"}')
                battery = self.reply(sub, 'b')['handle']
                # The Battery Level's CCCD, right after its value: the gateway's own subscription.
                self.send(broker, json.dumps({'id': 'c', 'op': 'write', 'handle': battery + 1, 'hex': '0000'}))
                c = self.reply(sub, 'c')
                self.assertIn('writes to 2902 (Client Characteristic Configuration) are not allowed', c['error'])
                self.send(broker, json.dumps({'id': 'd', 'op': 'write-without-response', 'handle': battery - 1, 'hex': '00'}))
                self.assertIn("declaration, which no command writes", self.reply(sub, 'd')['error'])
                self.send(broker, '{"id": "r", "op": "read", "uuid": "2A21"}')
                self.assertTrue(self.reply(sub, 'r')['ok'], 'reads are not limited')
                err = gw.stop()
            self.assertIn('warning: --commands-insecure: writes to the devices are taken from anyone who can publish', err)

    def test_a_read_command_of_a_protected_value_never_pairs(self):
        # The attack: a --commands read of a characteristic that needs encryption, on an
        # unbonded device. Command links raised security: the read paired and bonded the
        # device behind the user's back. Now the reply carries the ATT error, no bond.
        bonds = tempfile.mkdtemp(prefix='hcigatt-gw-bonds-')
        with Broker() as broker, Peer('--peripheral', self.THERMO) as peer, \
                Subscriber(broker, 'hcigatt/gw1/+/reply', 'hcigatt/gw1/status') as sub:
            with Gateway(peer, broker.uri, '--device', 'F0:F1:F2:F3:F4:01', '--commands', 'read', '--bond-dir', bonds) as gw:
                self.online(sub)
                self.send(broker, json.dumps({'id': 's', 'op': 'read', 'uuid': self.SECRET}))
                s = self.reply(sub, 's')
                self.assertFalse(s['ok'], s)
                self.assertIn('Insufficient Encryption', s['error'])
                self.send(broker, json.dumps({'id': 'r', 'op': 'read', 'uuid': self.ECHO}))
                self.assertEqual(self.reply(sub, 'r')['hex'], b'echo'.hex(), 'the link goes on')
                err = gw.stop()
            self.assertEqual([f for f in os.listdir(bonds) if f.endswith('.bond')], [], 'a bond made by a read command')
            self.assertNotIn('paired', err)
            self.assertIsNone(peer.events.wait_event('paired', 0.5), 'the device paired')

    def test_a_retained_write_is_never_executed(self):
        # Left retained on the broker before the gateway started: it arrives with the
        # subscription, marked retained, at every start. (A retained publish to a gateway
        # already subscribed arrives as a live one: MQTT 3.1.1 §3.3.1.3.)
        with Broker() as broker, Peer('--peripheral', self.THERMO) as peer, \
                Subscriber(broker, 'hcigatt/gw1/+/reply', 'hcigatt/gw1/status') as sub:
            self.send(broker, json.dumps({'id': 'kept', 'op': 'write', 'uuid': self.ECHO, 'text': 'kept'}), retain=True)
            with Gateway(peer, broker.uri, '--device', 'F0:F1:F2:F3:F4:01', '--commands', 'write', '--commands-insecure',
                         '--commands-allow', self.ECHO) as gw:
                self.assertIn('a retained message is never executed', self.reply(sub, 'kept')['error'])
                self.online(sub)
                self.send(broker, json.dumps({'id': 'r', 'op': 'read', 'uuid': self.ECHO}))
                self.assertEqual(self.reply(sub, 'r')['hex'], b'echo'.hex(), 'the retained write was not done')
                gw.stop()

    def test_a_command_for_a_device_that_is_away_times_out(self):
        with Broker() as broker, Peer('--peripheral', self.THERMO) as peer, \
                Subscriber(broker, 'hcigatt/gw1/+/reply', 'hcigatt/gw1/status') as sub:
            with Gateway(peer, broker.uri, '--device', 'AA:BB:CC:DD:EE:FF/public', '--connect-timeout', '1',
                         '--commands', 'read') as gw:
                self.online(sub)
                self.send(broker, '{"id": "t", "op": "read", "uuid": "2A19", "timeout": 2}', device='AABBCCDDEEFF')
                t = self.reply(sub, 't')
                self.assertFalse(t['ok'])
                self.assertIn('the link to AA:BB:CC:DD:EE:FF is down (waited 2 s)', t['error'])
                self.assertIsNone(gw.proc.poll(), gw.stderr())
                gw.stop()


def iso_seconds(text):
    t = time.strptime(text[:19], '%Y-%m-%dT%H:%M:%S')
    return calendar.timegm(t) + int(text[20:23]) / 1000


def free_tls_port():
    from mqtt_broker import free_port
    return free_port()


def make_certificates(d):
    """A CA and a broker certificate for localhost (with its SAN), made by openssl."""
    def run(*args):
        subprocess.run(['openssl', *args], check=True, capture_output=True, cwd=d)
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2',
        '-subj', '/CN=hcigatt test CA')
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
    with open(os.path.join(d, 'san.ext'), 'w') as f:
        f.write('subjectAltName=DNS:localhost,IP:127.0.0.1\n')
    run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem',
        '-days', '2', '-extfile', 'san.ext')
    os.chmod(os.path.join(d, 'server.key'), 0o644)



def make_server_certificate(d, stem, san):
    """Another broker certificate from the CA of make_certificates, with `san` only."""
    def run(*args):
        subprocess.run(['openssl', *args], check=True, capture_output=True, cwd=d)
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f'{stem}.key', '-out', f'{stem}.csr', '-subj', '/CN=other.example')
    with open(os.path.join(d, f'{stem}.ext'), 'w') as f:
        f.write(f'subjectAltName={san}\n')
    run('x509', '-req', '-in', f'{stem}.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', f'{stem}.pem',
        '-days', '2', '-extfile', f'{stem}.ext')
    os.chmod(os.path.join(d, f'{stem}.key'), 0o644)


def make_client_certificates(d):
    """Client certificates from the CA of make_certificates: RSA with its key apart, and
    EC P-256 with the key appended to the certificate file."""
    def run(*args):
        subprocess.run(['openssl', *args], check=True, capture_output=True, cwd=d)
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'client-rsa.key', '-out', 'client-rsa.csr',
        '-subj', '/CN=gateway-rsa')
    run('x509', '-req', '-in', 'client-rsa.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
        '-out', 'client-rsa.pem', '-days', '2')
    run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'client-ec.key',
        '-out', 'client-ec.csr', '-subj', '/CN=gateway-ec')
    run('x509', '-req', '-in', 'client-ec.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
        '-out', 'client-ec.pem', '-days', '2')
    with open(os.path.join(d, 'client-ec.key')) as key, open(os.path.join(d, 'client-ec.pem'), 'a') as cert:
        cert.write(key.read())


def stamp(day, hour):
    """Seconds since 1970 of the test meter's reading taken 2026-12-DAY at HOUR o'clock."""
    return calendar.timegm((2026, 12, day, hour, 0, 0))


class GatewayRecordsTests(Contiguous, unittest.TestCase):
    """--records: a followed glucose meter's stored records, each once, across restarts."""

    @staticmethod
    def wait_log(gw, text, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in gw.stderr():
                return True
            if gw.proc.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def run_meter(self, sub, broker, spool, mode, said):
        """One gateway run against the meter in `mode`: the readings of records it published."""
        before = len(sub.readings('/glucose_measurement'))
        with Peer('--peripheral', f'Meter-1,gatt={mode}') as peer, \
                Gateway(peer, broker.uri, '--device', 'F0:F1:F2:F3:F4:01', '--records', spool=spool) as gw:
            self.assertTrue(self.wait_log(gw, said), gw.stderr())
            err = gw.stop()
            self.assertEqual(gw.proc.returncode, 0, err)
        # As many as the log said, once the broker handed them on.
        announced = re.search(r'(\d+) new stored record', said)
        n = int(announced.group(1)) if announced else 0
        sub.wait_for(lambda s: len(s.readings('/glucose_measurement')) >= before + n, timeout=10, what=f'{n} records')
        time.sleep(0.3)  # and no more than that
        return [j for _, j in sub.readings('/glucose_measurement')[before:]]

    def numbers(self, sub, broker, spool, mode, said):
        """The sequence numbers of the records one run published."""
        return [j['sequence_number'] for j in self.run_meter(sub, broker, spool, mode, said)]

    def test_a_flooding_meter_is_given_up_at_the_deadline_and_holds_up_no_other_device(self):
        # The attack: a meter that answers Report Stored Records with malformed values for
        # ever and never an answer. Its fetch used to have no limit: it held its own
        # follower, and the values it kept grew the gateway's memory. Now it is given up at
        # --procedure-timeout, said once; the meter's own battery level is followed while the
        # fetch runs (only the record service's values wait for it), and the thermometer
        # beside it is read throughout.
        spool = tempfile.mkdtemp(prefix='hcigatt-spool-')
        with Broker() as broker, Subscriber(broker, 'hcigatt/#') as sub, \
                Peer('--peripheral', 'Meter-1,gatt=glucose-flood', '--peripheral', 'Thermo-2,service=1809,gatt=health') as peer, \
                Gateway(peer, broker.uri, '--device', 'F0:F1:F2:F3:F4:01', '--device', 'F0:F1:F2:F3:F4:02', '--records',
                        '--procedure-timeout', '8', spool=spool) as gw:
            started = time.monotonic()
            sub.wait_for(lambda s: len(s.readings('F0F1F2F3F401/battery_level')) >= 1, timeout=20,
                         what='the meter\'s battery level during the fetch')
            self.assertNotIn('stored records not fetched', gw.stderr(), 'the live value waited for the fetch')
            self.assertTrue(self.wait_log(gw, 'F0F1F2F3F401: stored records not fetched', timeout=20), gw.stderr()[-3000:])
            self.assertLess(time.monotonic() - started, 15)
            sub.wait_for(lambda s: len(s.readings('F0F1F2F3F402/temperature_measurement')) >= 3, timeout=20,
                         what='the other device\'s readings')
            err = gw.stop()
            self.assertEqual(gw.proc.returncode, 0, err[-3000:])
        self.assertRegex(err, r'F0F1F2F3F401: stored records not fetched: the record procedure did not finish within 8 s: '
                              r'given up \(0 records, \d+ malformed\)')
        self.assertLessEqual(len(re.findall(r'F0F1F2F3F401: a malformed stored', err)), 8, err[-3000:])
        self.assertEqual([j for _, j in sub.readings('F0F1F2F3F401/glucose_measurement') if j.get('stored')], [],
                         'no stored record published from the flood')

    def test_record_numbers_that_wrap_past_65535(self):
        spool = tempfile.mkdtemp(prefix='hcigatt-spool-')
        with Broker() as broker, Subscriber(broker, 'hcigatt/#') as sub:
            self.assertEqual(self.numbers(sub, broker, spool, 'glucose-nearwrap', '2 new stored records (success)'),
                             [65533, 65534])
            # 65535, then 0 and 1: after the mark on both sides of the wrap, not a renumbering.
            self.assertEqual(self.numbers(sub, broker, spool, 'glucose-wrapped', '3 new stored records (success)'),
                             [65535, 0, 1])
            with open(os.path.join(spool, 'records')) as f:
                # The mark: the record's number and its measurement time (#1 at 01:00).
                self.assertEqual(f.read(), f'F0F1F2F3F401 1 {stamp(1, 1)}\n')
            self.assertEqual(self.numbers(sub, broker, spool, 'glucose-wrapped', '0 new stored records (newest #1 published already)'), [])

    def test_new_records_only_across_restarts_and_a_meter_that_numbers_anew(self):
        spool = tempfile.mkdtemp(prefix='hcigatt-spool-')
        with Broker() as broker, Subscriber(broker, 'hcigatt/#') as sub:
            def run(mode, said):
                readings = self.run_meter(sub, broker, spool, mode, said)
                return [j['sequence_number'] for j in readings], readings

            numbers, readings = run('glucose', 'F0F1F2F3F401: 5 new stored records (success)')
            self.assertEqual(numbers, [1, 2, 3, 4, 5])
            # Each at its own measurement time (the meter's clock), stored, its context inside.
            self.assertEqual([j['time'] for j in readings], [f'2026-12-01T0{n}:00:00.000Z' for n in range(1, 6)])
            self.assertTrue(all(j['stored'] is True and j['device'] == 'F0:F1:F2:F3:F4:01' for j in readings), readings)
            self.assertEqual(readings[1]['context']['meal']['name'], 'preprandial (before meal)')
            self.assertEqual(readings[0]['glucose_mg_per_dl'], 91.0)
            with open(os.path.join(spool, 'records')) as f:
                self.assertEqual(f.read(), f'F0F1F2F3F401 5 {stamp(1, 5)}\n')

            # Restarted, the meter as it was: nothing published again.
            numbers, _ = run('glucose', 'F0F1F2F3F401: 0 new stored records (newest #5 published already)')
            self.assertEqual(numbers, [])
            # Three readings more: only those.
            numbers, _ = run('glucose-more', 'F0F1F2F3F401: 3 new stored records (success)')
            self.assertEqual(numbers, [6, 7, 8])
            # The meter was reset and numbers from 1 again: its new readings are fetched.
            numbers, readings = run('glucose-renumbered', 'F0F1F2F3F401: 3 new stored records (success)')
            self.assertEqual(numbers, [1, 2, 3])
            self.assertEqual(readings[0]['time'], '2026-12-02T01:00:00.000Z')
            with open(os.path.join(spool, 'records')) as f:
                self.assertEqual(f.read(), f'F0F1F2F3F401 3 {stamp(2, 3)}\n')
            # A meter that reports every record whatever the operator: nothing twice.
            numbers, _ = run('glucose-unfiltered', 'F0F1F2F3F401: 2 new stored records (success)')
            self.assertEqual(numbers, [4, 5])
            # Reset again, and since with more readings than the mark counts (nine; #5 was
            # published): its #5 has another time, so all nine are new.
            numbers, readings = run('glucose-reset', 'F0F1F2F3F401: 9 new stored records (success)')
            self.assertEqual(numbers, list(range(1, 10)))
            self.assertEqual(readings[0]['time'], '2026-12-03T01:00:00.000Z')
            with open(os.path.join(spool, 'records')) as f:
                self.assertEqual(f.read(), f'F0F1F2F3F401 9 {stamp(3, 9)}\n')
            # The gateway's own seq runs on without a gap or a repeat over the runs.
            self.assert_contiguous(sub.readings('hcigatt/gw1/F0F1F2F3F401/'), 'the meter\'s')


if __name__ == '__main__':
    unittest.main()
