"""Host-side checks of Tests/vm/run-job's kernel log scanner (no VM needed)."""
import importlib.machinery
import importlib.util
import os
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
loader = importlib.machinery.SourceFileLoader('run_job', os.path.join(HERE, 'run-job'))
spec = importlib.util.spec_from_loader('run_job', loader)
run_job = importlib.util.module_from_spec(spec)
loader.exec_module(run_job)

ECDH_SELFTEST = '''[    5.36] alg: ecdh-nist-p256: test failed on vector 2, err=-14
[    5.37] alg: self-tests for ecdh-nist-p256 using ecdh-nist-p256-generic failed (rc=-14)
[    5.37] ------------[ cut here ]------------
[    5.37] alg: self-tests for ecdh-nist-p256 using ecdh-nist-p256-generic failed (rc=-14)
[    5.37] WARNING: CPU: 1 PID: 98 at crypto/testmgr.c:5907 alg_test.cold+0x7c/0xf5
[    5.38] Call Trace:
[    5.39]  <TASK>
[    5.39]  cryptomgr_test+0x27/0x50
[    5.39]  </TASK>
[    5.40] ---[ end trace 0000000000000000 ]---
'''

BT_WARNING = '''[   40.10] ------------[ cut here ]------------
[   40.10] WARNING: CPU: 0 PID: 7 at net/bluetooth/hci_conn.c:1234 hci_conn_del+0x1/0x2
[   40.11] Call Trace:
[   40.12] ---[ end trace 0000000000000000 ]---
'''


class KernelLogScanner(unittest.TestCase):
    def test_clean_log(self):
        self.assertEqual(run_job.kernel_trouble('[ 1.0] Bluetooth: Core ver 2.22\n'
                                                '[ 0.03] RETBleed: WARNING: Spectre v2 mitigation\n'),
                         ([], []))

    def test_bug_oops_panic_and_list_corruption_fail(self):
        for line in ('BUG: kernel NULL pointer dereference, address: 0000000000000008',
                     'Oops: 0000 [#1] PREEMPT SMP NOPTI',
                     'Kernel panic - not syncing: Fatal exception',
                     'list_del corruption. prev->next should be ffff, but was dead000000000100',
                     'general protection fault, probably for non-canonical address'):
            trouble, known = run_job.kernel_trouble(f'[ 9.9] {line}\n')
            self.assertEqual(len(trouble), 1, line)

    def test_the_ecdh_selftest_failure_fails(self):
        # The guest loads the RNG ECDH needs: a failing self-test means no LE pairing.
        trouble, known = run_job.kernel_trouble(ECDH_SELFTEST)
        self.assertEqual(known, [])
        self.assertTrue(any('crypto/testmgr.c' in t for t in trouble), trouble)

    def test_a_known_warning_is_let_through_and_others_still_fail(self):
        with mock.patch.object(run_job, 'KNOWN_WARNINGS', [('at crypto/testmgr.c', 'alg: self-tests for ecdh-nist-p256')]):
            trouble, known = run_job.kernel_trouble(ECDH_SELFTEST)
            self.assertEqual(trouble, [])
            self.assertEqual(len(known), 1)
            self.assertIn('crypto/testmgr.c', known[0])
            trouble, known = run_job.kernel_trouble(ECDH_SELFTEST + BT_WARNING)
            self.assertEqual(len(known), 1)
            self.assertTrue(any('net/bluetooth/hci_conn.c' in t for t in trouble), trouble)
            self.assertTrue(any('Call Trace' in t for t in trouble), trouble)
            # The same self-test warning for another curve is not the known one.
            trouble, known = run_job.kernel_trouble(ECDH_SELFTEST.replace('p256', 'p384'))
            self.assertEqual(known, [])
            self.assertTrue(trouble)


if __name__ == '__main__':
    unittest.main()
