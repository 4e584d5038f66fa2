"""hcigatt records: stored readings through the Record Access Control Point (2A52).

Against `hcigatt serve --profile glucose` (our meter: encrypted service, bonding, twelve
readings, the Glucose Service's error cases) on a second virtual controller, and against
Bumble meters that misbehave on purpose (gatt=glucose-MODE in gatt_db.py): busy, silent,
records out of order and repeated, a record after the answer, records after an Abort."""
import calendar
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer import HCIGATT, Peer, hcigatt, json_lines  # noqa: E402
from test_serve import Serve  # noqa: E402


# Runs argv[1:] and prints its peak RSS (ru_maxrss of its only child) on stderr.
PEAK_RSS = '''
import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:]).returncode
print(f"peak-rss-kib {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}", file=sys.stderr)
sys.exit(rc)
'''


def record_numbers(text):
    """The sequence numbers of the records printed as text, in order."""
    return [int(m.group(1)) for m in re.finditer(r'^#(\d+), ', text, re.M)]


class RecordsAgainstServeTests(unittest.TestCase):
    """Both ends are hcigatt: the meter and the collector, bonded on the first request."""

    def test_every_selection_count_delete_and_no_records_found(self):
        with tempfile.TemporaryDirectory() as tmp, Peer('--hosts', '2') as world:
            meter, collector = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            with Serve(meter, '--profile', 'glucose', '--name', 'Glucose-1', '--bond-dir', os.path.join(tmp, 's')) as serve:
                def records(*args):
                    return hcigatt('records', 'Glucose-1', '--transport', collector, '--bond-dir', os.path.join(tmp, 'c'), *args)

                # Everything, as text: each reading once, in order, contexts on every third.
                rc, out, err = records()
                self.assertEqual(rc, 0, err)
                self.assertEqual(record_numbers(out), list(range(1, 13)), out)
                self.assertEqual(len(re.findall(r'\| context: #(\d+)', out)), 4, out)
                for n in (3, 6, 9, 12):
                    self.assertRegex(out, rf'(?m)^#{n}, .*context follows  \| context: #{n}, ')
                self.assertIn('12 records; response: success', err)
                self.assertIn('bonded', err, 'the meter asks for encryption: paired and bonded')

                # --since as JSON: one object per record with its sequence number and time,
                # the context inside its record, then the answer.
                rc, out, err = records('--since', '10', '--json')
                self.assertEqual(rc, 0, err)
                objs = json_lines(out)
                self.assertEqual([o['kind'] for o in objs], ['record'] * 3 + ['response'])
                self.assertEqual([o['sequence_number'] for o in objs[:3]], [10, 11, 12])
                self.assertTrue(all(re.fullmatch(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d', o['time']) for o in objs[:3]), objs)
                self.assertEqual(objs[2]['context']['sequence_number'], 12)
                self.assertNotIn('context', objs[0])
                self.assertEqual(objs[3]['records'], 3)
                self.assertEqual(objs[3]['response'], {'value': 1, 'name': 'success'})
                self.assertIn('encrypted with the stored bond', err, 'the bond is used, no pairing again')

                for args, numbers in ((['--last'], [12]), (['--first'], [1]), (['--range', '3-5'], [3, 4, 5]),
                                      (['--until', '2'], [1, 2])):
                    with self.subTest(args=args):
                        rc, out, err = records(*args)
                        self.assertEqual((rc, record_numbers(out)), (0, numbers), err)

                rc, out, err = records('--count')
                self.assertEqual(rc, 0, err)
                self.assertIn('number of stored records: 12', err)

                # Nothing matches: not an error.
                rc, out, err = records('--since', '100')
                self.assertEqual((rc, out), (0, ''), err)
                self.assertIn('0 records; response: no records found', err)

                # Deleting: asked twice; the meter says so and the records are gone.
                rc, out, err = records('--delete', '--until', '4')
                self.assertEqual(rc, 2, err)
                rc, out, err = records('--delete', '--yes', '--until', '4')
                self.assertEqual(rc, 0, err)
                self.assertIn('deleted', err)
                self.assertIsNotNone(serve.wait('note', 5, message='deleted 4 stored glucose records for C0:FF:EE:00:00:02 (public), handle 0x0001'),
                                     [e.get('message') for e in serve.all('note')])
                rc, out, err = records('--count', '--json')
                self.assertEqual(json_lines(out)[-1]['number_of_records'], 8, out)
                rc, out, err = records()
                self.assertEqual(record_numbers(out), list(range(5, 13)), out)
                self.assertEqual(serve.close(), 0, serve.stderr())


    def test_cgm_records_by_time_offset_dated_by_the_session_start(self):
        # serve --profile cgm: two hours of a session, a record every five minutes, the RACP
        # filtering on the records' time offsets; an encrypted link.
        with tempfile.TemporaryDirectory() as tmp, Peer('--hosts', '2') as world:
            sensor, collector = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            with Serve(sensor, '--profile', 'cgm', '--name', 'CGM-1', '--bond-dir', os.path.join(tmp, 's')) as serve:
                def records(*args):
                    return hcigatt('records', 'CGM-1', '--service', 'cgm', '--transport', collector,
                                   '--bond-dir', os.path.join(tmp, 'c'), *args)

                rc, out, err = records('--json')
                self.assertEqual(rc, 0, err)
                self.assertIn('bonded', err)
                objs = json_lines(out)
                self.assertEqual([o['time_offset_minutes'] for o in objs[:-1]], list(range(5, 121, 5)), out)
                self.assertEqual(objs[-1]['records'], 24)
                start = time.strptime(objs[0]['time'], '%Y-%m-%d %H:%M:%S')
                later = time.strptime(objs[1]['time'], '%Y-%m-%d %H:%M:%S')
                self.assertEqual(calendar.timegm(later) - calendar.timegm(start), 300, 'five minutes apart, dated by the session start')
                record = objs[0]['measurement']
                self.assertEqual((record['time_offset_minutes'], record['quality_percent'], record['unit']), (5, 95.0, 'mg/dL'))

                rc, out, err = records('--since', '110')
                self.assertEqual(rc, 0, err)
                self.assertEqual(re.findall(r'at \+(\d+) min', out), ['110', '115', '120'], out)
                rc, out, err = records('--range', '20-30', '--count')
                self.assertIn('number of stored records: 3', err)
                rc, out, err = records('--delete', '--yes', '--until', '60')
                self.assertEqual(rc, 0, err)
                rc, out, err = records('--first')
                self.assertEqual(re.findall(r'at \+(\d+) min', out), ['65'], out)
                self.assertEqual(serve.close(), 0, serve.stderr())

    def test_pulse_oximeter_all_records_only(self):
        # serve --profile plx: spot-checks without sequence numbers, All Records only,
        # no encryption asked.
        with tempfile.TemporaryDirectory() as tmp, Peer('--hosts', '2') as world:
            meter, collector = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            with Serve(meter, '--profile', 'plx', '--name', 'Oxi-1', '--bond-dir', os.path.join(tmp, 's')) as serve:
                def records(*args):
                    return hcigatt('records', 'Oxi-1', '--service', 'plx', '--transport', collector,
                                   '--bond-dir', os.path.join(tmp, 'c'), *args)

                rc, out, err = records('--json')
                self.assertEqual(rc, 0, err)
                objs = json_lines(out)
                self.assertEqual([o['kind'] for o in objs], ['record'] * 8 + ['response'], out)
                times = [o['time'] for o in objs[:8]]
                self.assertEqual(times, sorted(times), 'oldest first')
                self.assertTrue(all(94 < o['measurement']['spo2pr_spot_check']['spo2'] < 100 for o in objs[:8]), out)
                self.assertNotIn('sequence_number', objs[0])
                self.assertEqual(objs[8]['response'], {'value': 1, 'name': 'success'})
                self.assertNotIn('bonded', err)

                rc, out, err = records('--count')
                self.assertEqual(rc, 0, err)
                self.assertIn('number of stored records: 8', err)
                # Filters are not the service's: said before connecting.
                for args in (['--last'], ['--since', '3']):
                    rc, out, err = records(*args)
                    self.assertEqual(rc, 2, err)
                    self.assertIn('takes all records only', err)
                rc, out, err = records('--delete', '--yes')
                self.assertEqual(rc, 0, err)
                self.assertIsNotNone(serve.wait('note', 5, message='deleted 8 stored plx records for C0:FF:EE:00:00:02 (public), handle 0x0001'))
                rc, out, err = records()
                self.assertEqual((rc, out), (0, ''), err)
                self.assertIn('0 records; response: no records found', err)
                self.assertEqual(serve.close(), 0, serve.stderr())


class IndicatedReadingsTests(unittest.TestCase):
    """--service bp: a cuff with no control point indicates what it kept once subscribed."""

    def test_a_cuff_hands_over_its_kept_readings_then_goes_quiet(self):
        with tempfile.TemporaryDirectory() as tmp, Peer('--hosts', '2') as world:
            cuff, collector = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            with Serve(cuff, '--profile', 'bloodpressure', '--name', 'Cuff-1', '--bond-dir', os.path.join(tmp, 's')) as serve:
                def records(*args):
                    return hcigatt('records', 'Cuff-1', '--service', 'bp', '--transport', collector,
                                   '--bond-dir', os.path.join(tmp, 'c'), *args)

                # The three kept from earlier in the day, oldest first (a live reading taken
                # while the collector listens may follow them).
                rc, out, err = records('--json', '--quiet', '2')
                self.assertEqual(rc, 0, err)
                objs = json_lines(out)
                self.assertEqual(objs[-1]['kind'], 'end', out)
                self.assertEqual(objs[-1]['ending'], 'quiet')
                readings = objs[:-1]
                self.assertEqual(objs[-1]['readings'], len(readings))
                self.assertIn(len(readings), (3, 4), out)
                self.assertEqual([(r['measurement']['systolic'], r['measurement']['diastolic']) for r in readings[:3]],
                                 [(119.0, 77.0), (120.0, 78.0), (121.0, 79.0)], out)
                times = [r['time'] for r in readings]
                self.assertEqual(times, sorted(times), 'oldest first')
                self.assertIn('nothing more for 2', err)
                # Three, or four when the cuff took one more before the collector subscribed.
                said = [e['message'] for e in serve.all('note') if 'stored readings sent to C0:FF:EE:00:00:02' in e['message']]
                self.assertEqual(len(said), 1, [e.get('message') for e in serve.all('note')])
                self.assertRegex(said[0], r'^bloodpressure: [34] stored readings sent to')

                # Handed over once: what comes next is only what the cuff took since.
                time.sleep(6)
                rc, out, err = records('--quiet', '1', '--json')
                self.assertEqual(rc, 0, err)
                later = [o for o in json_lines(out) if o['kind'] == 'record']
                self.assertTrue(1 <= len(later) <= 3, out)
                self.assertGreater(min(o['time'] for o in later), times[2], 'the kept three are not sent again')
                self.assertEqual(serve.close(), 0, serve.stderr())

    def test_a_bonded_cuff_hands_over_the_moment_the_link_is_encrypted(self):
        # A cuff that wants encryption: the first collection pairs. A collector that then
        # vanishes (killed) leaves its CCCD set in the bond, so on the next connection the
        # cuff sends what it kept as soon as the link is encrypted, before the collector has
        # discovered or subscribed: those indications are kept for it, not lost.
        with tempfile.TemporaryDirectory() as tmp, Peer('--hosts', '2') as world:
            cuff, collector = (f'tcp:127.0.0.1:{p}' for p in world.ready['ports'])
            bonds = os.path.join(tmp, 'c')
            with Serve(cuff, '--profile', 'bloodpressure', '--security', 'encrypted', '--name', 'Cuff-1',
                       '--bond-dir', os.path.join(tmp, 's')) as serve:
                rc, out, err = hcigatt('records', 'Cuff-1', '--service', 'bp', '--quiet', '1', '--transport', collector,
                                       '--bond-dir', bonds)
                self.assertEqual(rc, 0, err)
                self.assertIn('bonded', err)
                self.assertGreaterEqual(len(out.splitlines()), 3, out)
                sub = subprocess.Popen([HCIGATT, 'subscribe', 'Cuff-1', '2a35', '--transport', collector, '--bond-dir', bonds],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                try:
                    self.assertIsNotNone(serve.wait('subscription', 20, uuid='2A35', client=2, indicate=True), serve.stderr())
                finally:
                    sub.kill()
                    sub.wait()
                    sub.stderr.close()
                # The link stays up until the next host takes the controller (the cuff's
                # indications meanwhile go unconfirmed, and are kept when the link goes).
                kept_from = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())
                time.sleep(6)
                second_from = time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())
                rc, out, err = hcigatt('records', 'Cuff-1', '--service', 'bp', '--quiet', '2', '--json', '--transport', collector,
                                       '--bond-dir', bonds)
                self.assertEqual(rc, 0, err)
                restored = serve.wait('bond-restored', 5, client=3)
                self.assertIsNotNone(restored, serve.all('bond-restored'))
                handed = [e['message'] for e in serve.all('note') if 'sent to' in e['message']]
                self.assertEqual(len(handed), 2, handed)  # the first collection's, then this one's
                readings = [o for o in json_lines(out) if o['kind'] == 'record']
                self.assertGreaterEqual(len(readings), 1, out)
                # A reading the cuff took while nobody listened (not a live one after connecting).
                kept = [r for r in readings if kept_from <= r['time'] < second_from]
                self.assertTrue(kept, (kept_from, second_from, [r['time'] for r in readings]))
                self.assertEqual(serve.close(), 0, serve.stderr())

    def test_a_device_that_never_stops_ends_at_the_limit(self):
        # Bumble's health device indicates 2A35 every half second for as long as it is subscribed.
        with Peer('--peripheral', 'Thermo-1,service=1809,gatt=health', '--notify-interval', '0.5') as peer:
            rc, out, err = hcigatt('records', 'Thermo-1', '--service', 'bp', '--limit', '3', '--transport', peer.transport)
            self.assertEqual(rc, 0, err)
            lines = out.splitlines()
            self.assertGreaterEqual(len(lines), 3, out)
            self.assertTrue(all('120/80 mmHg' in l for l in lines), out)
            self.assertIn(f'{len(lines)} readings; still coming at the 3.0 s limit (--limit)', err)
            # The CCCD was cleared before disconnecting.
            self.assertIsNotNone(peer.events.wait_event('written', 5, uuid='2902', value='0000'))
        # A device without the service: named.
        with Peer('--peripheral', 'Thermo-1,service=1809,gatt=health') as peer:
            rc, out, err = hcigatt('records', 'Thermo-1', '--service', 'weight', '--transport', peer.transport)
            self.assertEqual(rc, 1, err)
            self.assertIn('the device has no Weight Scale Service (181D)', err)


class Collector:
    """`hcigatt records` running, its stdout read line by line (to interrupt it mid-report)."""

    def __init__(self, *args):
        self.bonds = tempfile.TemporaryDirectory()
        env = dict(os.environ, HCIGATT_BOND_DIR=os.path.join(self.bonds.name, 'b'))
        self.proc = subprocess.Popen([HCIGATT, 'records', *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip('\n'))
                self.cond.notify_all()

    def wait_lines(self, n, timeout=20):
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.lines) < n and time.monotonic() < deadline:
                self.cond.wait(deadline - time.monotonic())
            return len(self.lines) >= n

    def finish(self, sig=None, timeout=40):
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.reader.join(timeout=5)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.bonds.cleanup()
        return rc, err


class RecordsAgainstMisbehavingMetersTests(unittest.TestCase):
    """Bumble meters: five readings 0.25 s apart (#2 with a context), and their faults."""

    def run_records(self, mode, *args):
        with Peer('--peripheral', f'Meter-1,gatt={mode}') as world:
            rc, out, err = hcigatt('records', 'Meter-1', '--transport', world.transport, *args)
            return rc, out, err, world.stderr()

    def test_a_well_behaved_meter_its_context_joined_to_its_reading(self):
        rc, out, err, log = self.run_records('glucose', '--json')
        self.assertEqual(rc, 0, err + log)
        objs = json_lines(out)
        self.assertEqual([o.get('sequence_number') for o in objs], [1, 2, 3, 4, 5, None])
        self.assertEqual(objs[1]['context']['meal']['name'], 'preprandial (before meal)')
        self.assertEqual(objs[0]['measurement']['glucose_mg_per_dl'], 91.0)
        self.assertEqual(objs[0]['time'], '2026-12-01 01:00:00')
        self.assertEqual(objs[-1]['response']['name'], 'success')

    def test_a_busy_meter_is_named_and_fails(self):
        rc, out, err, _ = self.run_records('glucose-busy')
        self.assertEqual((rc, out), (1, ''), err)
        self.assertIn('busy: a procedure is already in progress (ATT error 0x80)', err)

    def test_a_silent_meter_times_out(self):
        start = time.monotonic()
        rc, out, err, _ = self.run_records('glucose-silent', '--procedure-timeout', '2')
        self.assertEqual((rc, out), (1, ''), err)
        self.assertIn('0 records; the procedure did not finish within 2 s (--procedure-timeout): given up', err)
        self.assertLess(time.monotonic() - start, 25, 'the timeout given, not 30 s')

    def test_a_flooding_meter_ends_on_its_own_within_the_deadline_in_bounded_memory(self):
        # The attack: Report Stored Records answered with an endless stream of malformed
        # Glucose Measurements and never an answer. Each used to restart the 30 s timer and
        # be kept: the command ran for good, its memory growing. Run as a new user would,
        # with no option: the record timer (not restarted by a value that does not decode)
        # ends it, the malformed values counted and the first few shown.
        with Peer('--peripheral', 'Meter-1,gatt=glucose-flood') as world:
            start = time.monotonic()
            p = subprocess.run([sys.executable, '-c', PEAK_RSS, HCIGATT, 'records', 'Meter-1', '--transport', world.transport],
                               capture_output=True, text=True, timeout=150)
            took = time.monotonic() - start
        rc, out, err = p.returncode, p.stdout, p.stderr
        peak = int(err.rsplit('peak-rss-kib ', 1)[1])
        self.assertEqual((rc, out), (1, ''), err[-2000:])
        self.assertLess(took, 60, 'ended by the 30 s record timer, not run for good')
        self.assertRegex(err, r'0 records; the device sent neither a record nor an answer for 30 s: the procedure failed; '
                              r'\d+ malformed values \(the first 8 shown\)', err[-2000:])
        flooded = int(re.search(r'(\d+) malformed values', err).group(1))
        self.assertGreater(flooded, 1000, 'the peer flooded')
        self.assertEqual(len(re.findall(r'^a malformed 2A18 Glucose Measurement', err, re.M)), 8, err[-3000:])
        self.assertLess(peak, 64 * 1024, f'peak RSS {peak} KiB')

    def test_a_meter_sending_new_records_for_ever_is_given_up_at_the_procedure_timeout(self):
        # Good records, each a new number, 20 ms apart, never an answer: every one is a
        # record, so only the overall deadline ends it (then Abort Operation is sent).
        with Peer('--peripheral', 'Meter-1,gatt=glucose-endless') as world:
            start = time.monotonic()
            rc, out, err = hcigatt('records', 'Meter-1', '--transport', world.transport, '--procedure-timeout', '4', '--json')
            took = time.monotonic() - start
            writes = [world.events.wait_event('racp-write', 5) for _ in range(2)]
        self.assertEqual(rc, 1, err)
        self.assertLess(took, 40)
        self.assertEqual([w and w['value'] for w in writes], ['0101', '0300'], 'the request, then Abort Operation')
        objs = json_lines(out)
        self.assertEqual(objs[-1]['response'], 'given up', objs[-1])
        self.assertEqual(objs[-1]['procedure_timeout_s'], '4')
        self.assertGreater(objs[-1]['records'], 20)
        self.assertEqual(len(objs) - 1, objs[-1]['records'], 'each record printed')
        self.assertIn('the procedure did not finish within 4 s (--procedure-timeout): given up', err)

    def test_a_meter_answering_another_procedure_is_not_taken_and_times_out(self):
        # Number of Stored Records and Delete answers to a report: stray, counted, not an end.
        rc, out, err, _ = self.run_records('glucose-wronganswer', '--procedure-timeout', '3')
        self.assertEqual((rc, out), (1, ''), err)
        self.assertRegex(err, r'0 records; the procedure did not finish within 3 s \(--procedure-timeout\): given up; '
                              r'\d+ answers to another procedure ignored')

    def test_records_out_of_order_and_repeated_are_said_and_the_repeat_dropped(self):
        rc, out, err, _ = self.run_records('glucose-disorder', '--json')
        self.assertEqual(rc, 0, err)
        objs = json_lines(out)
        self.assertEqual([o.get('sequence_number') for o in objs[:-1]], [3, 1, 2, 5, 4])
        self.assertEqual(objs[2]['context']['sequence_number'], 2, 'the first #2 keeps its context')
        self.assertEqual((objs[-1]['duplicates_dropped'], objs[-1]['out_of_order']), (1, 2), objs[-1])
        self.assertIn('5 records; response: success; 1 repeated record dropped; 2 out of sequence-number order', err)

    def test_a_record_after_the_answer_is_not_taken(self):
        rc, out, err, _ = self.run_records('glucose-late')
        self.assertEqual(rc, 0, err)
        self.assertEqual(record_numbers(out), [1, 2, 3, 4, 5])

    def test_ctrl_c_aborts_and_records_still_coming_are_dropped_and_counted(self):
        for mode, dropped in (('glucose', 0), ('glucose-lagging', 2)):
            with self.subTest(mode=mode), Peer('--peripheral', f'Meter-1,gatt={mode}') as world:
                c = Collector('Meter-1', '--transport', world.transport, '--json')
                if not c.wait_lines(2):
                    self.fail(f'no records: {c.finish(signal.SIGKILL)}')
                rc, err = c.finish(signal.SIGINT)
                self.assertEqual(rc, 0, err)
                objs = [json.loads(line) for line in c.lines]
                records = [o for o in objs if o['kind'] == 'record']
                self.assertLess(len(records), 5, 'stopped before the end')
                end = objs[-1]
                self.assertEqual((end['kind'], end['response'], end['abort_confirmed']), ('response', 'aborted', True), objs)
                self.assertEqual(end.get('dropped_after_abort', 0), dropped, objs)
                self.assertEqual(end['records'], len(records))
                self.assertIn('aborted', err)
                if dropped:
                    self.assertIn(f'{dropped} records after the Abort dropped', err)
                writes = [world.events.wait_event('racp-write', 5) for _ in range(2)]
                self.assertEqual([w and w['value'] for w in writes], ['0101', '0300'], 'the request, then Abort Operation')


if __name__ == '__main__':
    unittest.main()
