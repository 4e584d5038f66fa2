"""hcigatt replay of captures the tests make with --snoop: a phone-like capture where scanning
is switched on and off, minutes apart; and a burst of 50 000 advertisers on a live scan."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from peer import HCIGATT, ROOT, Peer, hcigatt, json_lines

ADVERTISERS = os.path.join(ROOT, 'Tests', 'static', 'advertisers.py')

PERIPHERALS = ['--peripheral', 'Thermo-1,service=1809,service=180F,mfr=004c:01020304',
               '--peripheral', 'Pulse-2,service=180D,address=C0:F1:F2:F3:F4:22,random',
               '--peripheral', 'Tag-3,service=FFE0,address=B0:B4:48:C9:8A:01']


def join_sessions(parts, out, gap_seconds):
    """Writes the records of the btsnoop files `parts` into one, each part shifted so that it
    starts `gap_seconds` after the previous one ended (scanning off in between)."""
    header = None
    shift = 0
    last = None
    with open(out, 'wb') as f:
        for path in parts:
            data = open(path, 'rb').read()
            if header is None:
                header = data[:16]
                f.write(header)
            offset = 16
            first = None
            if last is not None:
                first = struct.unpack_from('>q', data, 16 + 16)[0]
                shift = last + gap_seconds * 1_000_000 - first
            while offset + 24 <= len(data):
                orig, incl, flags, drops, ts = struct.unpack_from('>IIIIq', data, offset)
                ts += shift
                last = ts
                f.write(struct.pack('>IIIIq', orig, incl, flags, drops, ts))
                f.write(data[offset + 24:offset + 24 + incl])
                offset += 24 + incl


class ReplayTests(unittest.TestCase):
    def test_device_table_spans_scan_sessions(self):
        """Three scans 90 s apart (longer than a live scan keeps a silent device) replay as one
        table: each advertiser is new once, and --stats counts the distinct devices."""
        with Peer(*PERIPHERALS) as peer, tempfile.TemporaryDirectory() as tmp:
            parts = []
            live_addresses = set()
            for i in range(3):
                path = os.path.join(tmp, f'scan{i}.btsnoop')
                rc, out, err = hcigatt('scan', '--transport', peer.transport, '--duration', '1.5', '--json',
                                       '--snoop', path)
                self.assertEqual(rc, 0, err)
                live_addresses |= {r['address'] for r in json_lines(out)}
                parts.append(path)
            self.assertEqual(len(live_addresses), 3, 'each live scan sees the three advertisers')
            joined = os.path.join(tmp, 'phone.btsnoop')
            join_sessions(parts, joined, gap_seconds=90)

            rc, out, err = hcigatt('replay', joined, '--json', '--stats')
            self.assertEqual(rc, 0, err)
            records = json_lines(out)
            stats = records[-1]
            lines = records[:-1]
            new = [r['address'] for r in lines if r['event'] == 'new']
            self.assertEqual(sorted(new), sorted(live_addresses), 'each device is new exactly once')
            self.assertEqual(stats['devices'], 3)
            self.assertEqual(stats['lines'], len(lines))
            # The scans were switched on three times: the capture holds three enables.
            rc, packets, err = hcigatt('replay', joined, '--packets', '--json')
            self.assertEqual(rc, 0, err)
            enables = [p for p in json_lines(packets)
                       if p['name'] in ('HCI_LE_Set_Scan_Enable', 'HCI_LE_Set_Extended_Scan_Enable')
                       and p.get('direction') == 'sent' and 'enable' in str(p)]
            self.assertGreaterEqual(len(enables), 3)

            rc, text, err = hcigatt('replay', joined)
            self.assertEqual(rc, 0, err)
            new_lines = [line for line in text.splitlines() if line.startswith('NEW ')]
            self.assertEqual(len(new_lines), 3, text)

    def test_capture_read_in_blocks_matches_whole(self):
        """A capture larger than the reader's block (1 MiB): every record is replayed."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'big.btsnoop')
            # 40 000 advertising reports of 59-byte events: about 3.3 MB.
            with open(path, 'wb') as f:
                f.write(b'btsnoop\0' + struct.pack('>II', 1, 1002))
                for i in range(40_000):
                    name = b'D-%05d' % i
                    ad = bytes([2, 1, 6, len(name) + 1, 9]) + name
                    report = bytes([1, 3, 1]) + struct.pack('<Q', 0xC0_0000_0000 | i)[:6] + bytes([len(ad)]) + ad + bytes([0xC4])
                    event = bytes([0x04, 0x3E, len(report) + 1, 0x02]) + report
                    f.write(struct.pack('>IIIIq', len(event), len(event), 3, 0, 0x00E03AB44A676000 + i * 1000))
                    f.write(event)
            rc, out, err = hcigatt('replay', path, '--stats')
            self.assertEqual(rc, 0, err)
            lines = out.splitlines()
            stats = json_lines(lines[-1])[0]
            self.assertEqual(len(lines) - 1, 40_000, 'one text line per device')
            self.assertEqual(stats['packets'], 40_000)
            self.assertEqual(stats['advertising_reports'], 40_000)
            self.assertEqual(stats['devices'], 40_000)
            self.assertEqual(stats['malformed'], 0)


def varied_capture(path, devices=700, rounds=4):
    """A capture of an active scan whose lines vary in every way the scan formatter writes:
    connectable devices with a name in their scan response, non-connectable ones whose
    manufacturer data changes each round, and extended advertisements longer than legacy
    data (kept outside the device's inline bytes), `rounds` times over `devices`."""
    records = []

    def event(params, subevent):
        return bytes([0x04, 0x3E, len(params) + 1, subevent]) + params

    def address(i):
        return struct.pack('<Q', 0xC0_0000_0000 | i)[:6]

    # LE Set Scan Parameters, active: scan responses count.
    records.append((2, bytes([0x01, 0x0B, 0x20, 7, 0x01, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00])))
    for r in range(rounds):
        for i in range(devices):
            kind = i % 3
            if kind == 0:
                ad = bytes([2, 1, 6, 3, 3, 0x0D, 0x18])
                report = bytes([1, 0x00, 1]) + address(i) + bytes([len(ad)]) + ad + bytes([0xC0 + r])
                records.append((3, event(report, 0x02)))
                name = b'Phone-%d' % i
                sr = bytes([len(name) + 1, 9]) + name
                report = bytes([1, 0x04, 1]) + address(i) + bytes([len(sr)]) + sr + bytes([0xC0])
                records.append((3, event(report, 0x02)))
            elif kind == 1:
                ad = bytes([2, 1, 4, 7, 0xFF, 0x4C, 0x00, r, i & 0xFF, 1, 2])
                report = bytes([1, 0x03, 1]) + address(i) + bytes([len(ad)]) + ad + bytes([0xB0])
                records.append((3, event(report, 0x02)))
            else:
                name = b'Extended-advertiser-with-a-long-name-%05d' % i
                ad = bytes([2, 1, 6, len(name) + 1, 9]) + name + bytes([5, 0xFF, 0xFF, 0xFF, r, 7])
                report = (struct.pack('<H', 0x0000) + bytes([1]) + address(i) + bytes([1, 0, 0xFF, 0x7F, 0xC8])
                          + struct.pack('<H', 0) + bytes([0]) + bytes(6) + bytes([len(ad)]) + ad)
                records.append((3, event(bytes([1]) + report, 0x0D)))
    with open(path, 'wb') as f:
        f.write(b'btsnoop\0' + struct.pack('>II', 1, 1002))
        for n, (flags, packet) in enumerate(records):
            f.write(struct.pack('>IIIIq', len(packet), len(packet), flags, 0, 0x00E03AB44A676000 + n * 1000))
            f.write(packet)


class FormattingThreadTests(unittest.TestCase):
    """replay formats scan results on a second thread, in batches, and the reading thread
    formats batches itself when that thread is behind: the same bytes, exit code and
    messages as formatting them on the reading thread (HCIGATT_REPLAY_ONE_THREAD, also the
    path when no thread can be made), with every batch on the second thread
    (HCIGATT_REPLAY_SHARING=never) and every second one on the reading thread (=alternate),
    for every scan-result mode, over many batches, for a capture cut off mid-record; and a
    reader that goes away stops it."""

    WAYS = ({}, {'HCIGATT_REPLAY_SHARING': 'never'}, {'HCIGATT_REPLAY_SHARING': 'alternate'},
            {'HCIGATT_REPLAY_ONE_THREAD': '1'})

    def run_all(self, *args):
        """(threaded as it comes, ...), one result per way; the last is one thread."""
        results = []
        for way in self.WAYS:
            env = dict(os.environ)
            for k in ('HCIGATT_REPLAY_ONE_THREAD', 'HCIGATT_REPLAY_SHARING'):
                env.pop(k, None)
            env.update(way)
            p = subprocess.run([HCIGATT, 'replay', *args], capture_output=True, env=env, timeout=120)
            results.append((p.returncode, p.stdout, p.stderr))
        return results

    def run_both(self, *args):
        results = self.run_all(*args)

        def comparable(out):
            # All but a --stats line's timing (its counts compared too).
            if '--stats' not in args:
                return out
            lines = out.splitlines()
            stats = json.loads(lines[-1])
            for timing in ('seconds', 'reports_per_second'):
                stats.pop(timing, None)
            return lines[:-1], stats
        for way, r in zip(self.WAYS, results[:-1]):
            self.assertEqual((r[0], comparable(r[1]), r[2]), (results[-1][0], comparable(results[-1][1]), results[-1][2]), way)
        return results[0], results[-1]

    def test_lines_from_the_formatting_thread_are_the_same_bytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'varied.btsnoop')
            varied_capture(path)
            for mode in ([], ['--json'], ['--duplicates'], ['--duplicates', '--json']):
                threaded, one = self.run_both(*mode, path)
                self.assertEqual(threaded[0], 0, threaded[2])
                self.assertEqual(threaded, one, mode)
                lines = threaded[1].count(b'\n')
                # 700 devices new, then each round's changed data (466 devices); or every
                # report, scan responses too, with --duplicates.
                self.assertEqual(lines, 700 + 3 * 466 if '--duplicates' not in mode else 4 * (700 + 234), mode)
                self.assertGreater(lines, 2 * 256, 'several batches')
            json_out = self.run_both('--json', path)[0][1].decode()
            extended = [d for d in json_lines(json_out) if d.get('name', '').startswith('Extended')]
            self.assertEqual(len(extended), 4 * 233, 'new, then an update each round')
            self.assertTrue(all(len(d['advertising_data']) > 62 for d in extended), 'data past 31 bytes kept whole')

    def test_a_capture_cut_off_gives_the_same_lines_and_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'varied.btsnoop')
            varied_capture(path)
            data = open(path, 'rb').read()
            with open(path, 'wb') as f:
                f.write(data[: len(data) * 2 // 3 + 5])
            threaded, one = self.run_both('--duplicates', '--stats', path)
            # All but the statistics' timing.
            (rc, out, err), (rc1, out1, err1) = threaded, one
            self.assertEqual((rc, out.splitlines()[:-1], err), (rc1, out1.splitlines()[:-1], err1))
            self.assertEqual(rc, 1)
            self.assertIn(b'is cut off', err)
            self.assertGreater(out.count(b'\n'), 1000)
            stats = json.loads(out.splitlines()[-1])
            self.assertEqual(stats['lines'], len(out.splitlines()) - 1)

    def test_a_reader_going_away_stops_the_replay(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'varied.btsnoop')
            varied_capture(path, devices=3000, rounds=6)
            env = dict(os.environ, HCIGATT_REPLAY_SHARING='alternate')
            p = subprocess.Popen([HCIGATT, 'replay', '--duplicates', '--json', path], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=env)
            first = p.stdout.readline()
            p.stdout.close()
            rc = p.wait(timeout=30)
            err = p.stderr.read()
            p.stderr.close()
            self.assertTrue(first.startswith(b'{"event":"new"'), first)
            self.assertEqual(rc, 0, err)
            self.assertEqual(err, b'', 'no statistics or warnings for a reader gone away')


class BondedReplayTests(unittest.TestCase):
    """replay --bond-dir: the specification's IRK and address (Core Vol 3 Part H Appendix
    D.7) in a bond file as `hcigatt pair` writes it; the capture's report from that address
    is shown with the bond's identity, a stranger's not. A directory named but missing is a
    usage error, not silently no resolution."""

    @staticmethod
    def capture(path, addresses):
        with open(path, 'wb') as f:
            f.write(b'btsnoop\0' + struct.pack('>II', 1, 1002))
            for i, address in enumerate(addresses):
                ad = bytes([2, 1, 6])
                report = bytes([1, 3, 1]) + address.to_bytes(6, 'little') + bytes([len(ad)]) + ad + bytes([0xC4])
                event = bytes([0x04, 0x3E, len(report) + 1, 0x02]) + report
                f.write(struct.pack('>IIIIq', len(event), len(event), 3, 0, 0x00E03AB44A676000 + i * 1000))
                f.write(event)

    def test_bonded_private_address_shows_its_identity(self):
        with tempfile.TemporaryDirectory() as tmp:
            bonds = os.path.join(tmp, 'bonds')
            os.mkdir(bonds, 0o700)
            with open(os.path.join(bonds, '001BDC010203-public.bond'), 'w') as f:
                f.write('version=1\nidentity=00:1B:DC:01:02:03/public\nsecure_connections=1\nauthenticated=0\n'
                        'key_size=16\ncreated=1700000000\nltk=000102030405060708090a0b0c0d0e0f\nltk_ediv=0\n'
                        'ltk_rand=0\nirk=ec0234a357c8ad05341010a60a397d9b\n')
            cap = os.path.join(tmp, 'rpa.btsnoop')
            self.capture(cap, [0x7081940DFBAA, 0x7081940DFBAB])
            rc, out, err = hcigatt('replay', cap, '--json', '--bond-dir', bonds)
            self.assertEqual(rc, 0, err)
            lines = json_lines(out)
            self.assertEqual([l['address'] for l in lines], ['70:81:94:0D:FB:AA', '70:81:94:0D:FB:AB'])
            self.assertEqual((lines[0].get('identity'), lines[0].get('identity_type')), ('00:1B:DC:01:02:03', 'public'))
            self.assertNotIn('identity', lines[1])
            rc, out, err = hcigatt('replay', cap, '--bond-dir', bonds)
            self.assertEqual(rc, 0, err)
            self.assertIn('identity 00:1B:DC:01:02:03 (public)', out.splitlines()[0])
            # Without the bond: no identity.
            rc, out, err = hcigatt('replay', cap, '--json', '--bond-dir', tmp)
            self.assertEqual(rc, 0, err)
            self.assertFalse(any('identity' in l for l in json_lines(out)))
            # A directory that is not there: said, and nothing printed.
            rc, out, err = hcigatt('replay', cap, '--json', '--bond-dir', os.path.join(tmp, 'typo'))
            self.assertEqual(rc, 2, (out, err))
            self.assertIn('--bond-dir', err)
            self.assertIn('No such file or directory', err)
            self.assertEqual(out, '')


def records(path):
    """The btsnoop header and the (header, data) of each record."""
    with open(path, 'rb') as f:
        data = f.read()
    out = []
    offset = 16
    while offset + 24 <= len(data):
        incl = struct.unpack_from('>I', data, offset + 4)[0]
        out.append((data[offset:offset + 24], data[offset + 24:offset + 24 + incl]))
        offset += 24 + incl
    return data[:16], out


class PacketsTests(unittest.TestCase):
    def test_att_handles_are_named_and_values_decoded_from_the_discovery_in_the_capture(self):
        """A GATT session recorded with --snoop (discovery, then Heart Rate notifications):
        replay --packets names each handle by the characteristic the discovery found and decodes
        the values; a capture cut after the discovery shows handles only."""
        with Peer('--peripheral', 'Thermo-1,service=1809,gatt=health') as peer, tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'session.btsnoop')
            rc, out, err = hcigatt('subscribe', 'F0:F1:F2:F3:F4:01/public', '2a37', '--count', '3', '--no-cache',
                                   '--transport', peer.transport, '--snoop', path)
            self.assertEqual(rc, 0, err)
            rc, packets, err = hcigatt('replay', path, '--packets', '--json')
            self.assertEqual(rc, 0, err)
            atts = [p['l2cap']['att'] for p in json_lines(packets)
                    if p['name'] == 'HCI_ACL_Data' and 'att' in p.get('l2cap', {})]
            notifications = [a for a in atts if a['pdu'] == 'ATT_HANDLE_VALUE_NTF']
            self.assertGreaterEqual(len(notifications), 3)
            for n in notifications:
                self.assertEqual(n['attribute_type'], '2A37', n)
                self.assertEqual(n['attribute_type_name'], 'Heart Rate Measurement')
                self.assertIn('heart_rate', n['decoded'], n)
                self.assertIn('bpm', n['decoded']['summary'])
            cccd = [a for a in atts if a['pdu'] == 'ATT_WRITE_REQ' and a.get('attribute_type') == '2902']
            self.assertGreaterEqual(len(cccd), 1, 'the CCCD write is named from Find Information')
            # The text form shows the same.
            rc, text, err = hcigatt('replay', path, '--packets')
            self.assertEqual(rc, 0, err)
            self.assertIn('attribute_type_name: "Heart Rate Measurement"', text)
            self.assertIn('bpm', text)

            # The same capture from the first notification on: no discovery, handles only.
            header, recs = records(path)
            first = next(i for i, (_, d) in enumerate(recs)
                         if d[:1] == b'\x02' and len(d) > 9 and d[7:9] == b'\x04\x00' and d[9] == 0x1B)
            cut = os.path.join(tmp, 'late.btsnoop')
            with open(cut, 'wb') as f:
                f.write(header)
                for h, d in recs[first:]:
                    f.write(h + d)
            rc, packets, err = hcigatt('replay', cut, '--packets', '--json')
            self.assertEqual(rc, 0, err)
            late = [p['l2cap']['att'] for p in json_lines(packets)
                    if p['name'] == 'HCI_ACL_Data' and p.get('l2cap', {}).get('att', {}).get('pdu') == 'ATT_HANDLE_VALUE_NTF']
            self.assertGreaterEqual(len(late), 1)
            for n in late:
                self.assertIn('attribute_handle', n)
                self.assertNotIn('attribute_type', n)


class BurstTests(unittest.TestCase):
    def test_burst_of_50000_advertisers_is_printed_whole(self):
        """A fake controller sends 50 000 distinct advertisers in one burst over TCP: the host
        stops reading while the output is behind (TCP holds the rest), so every one is
        printed and nothing is dropped; the summary says so."""
        total = 50_000
        fake = subprocess.Popen([sys.executable, ADVERTISERS, '--batch', str(total), '--batches', '1'],
                                stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
        try:
            port = json.loads(fake.stdout.readline())['port']
            proc = subprocess.run([HCIGATT, 'scan', '--transport', f'tcp:127.0.0.1:{port}', '--passive', '--json',
                                   '--duration', '15'], capture_output=True, text=True, timeout=60)
        finally:
            fake.kill()
            fake.wait()
            fake.stdout.close()
            fake.stdin.close()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        printed = [json.loads(line)['address'] for line in proc.stdout.splitlines() if line.strip()]
        summary = json.loads(proc.stderr.strip().splitlines()[-1])
        self.assertEqual(summary['event'], 'summary')
        self.assertEqual(summary['advertising_reports'], total, 'the host read the whole burst')
        self.assertEqual(summary['dropped_events'], 0, proc.stderr)
        self.assertNotIn('dropped so far', proc.stderr)
        self.assertEqual(len(printed), total, 'every advertiser printed')
        self.assertEqual(len(set(printed)), total, 'each once')
        self.assertEqual(summary['devices'], total)

    def test_a_slow_reader_holds_the_burst_back_without_loss(self):
        """The same burst read by a consumer that stops for 3 s after the first lines (a
        paused pipeline, a slow terminal): the burst waits in TCP, nothing is dropped."""
        total = 30_000
        fake = subprocess.Popen([sys.executable, ADVERTISERS, '--batch', str(total), '--batches', '1'],
                                stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
        try:
            port = json.loads(fake.stdout.readline())['port']
            with tempfile.TemporaryFile() as errfile:
                proc = subprocess.Popen([HCIGATT, 'scan', '--transport', f'tcp:127.0.0.1:{port}', '--passive', '--json',
                                         '--duration', '20'], stdout=subprocess.PIPE, stderr=errfile)
                first = proc.stdout.readline()
                time.sleep(3)  # the reader is away; hcigatt's stdout pipe fills, then its scan stream
                rest = proc.stdout.read()  # through the same buffered reader as the first line
                proc.stdout.close()
                proc.wait(timeout=60)
                errfile.seek(0)
                err = errfile.read().decode()
        finally:
            fake.kill()
            fake.wait()
            fake.stdout.close()
            fake.stdin.close()
        self.assertEqual(proc.returncode, 0, err)
        lines = [first] + rest.splitlines()
        printed = {json.loads(line)['address'] for line in lines if line.strip()}
        summary = json.loads(err.strip().splitlines()[-1])
        self.assertEqual(summary['dropped_events'], 0, err)
        self.assertEqual(len(printed), total)

if __name__ == '__main__':
    unittest.main()
