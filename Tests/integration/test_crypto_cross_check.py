"""Our Security Manager functions against bumble.crypto on fresh random inputs."""
import os
import subprocess
import tempfile
import unittest

from peer import PYTHON, ROOT

HERE = os.path.dirname(os.path.abspath(__file__))


class CryptoCrossCheckTests(unittest.TestCase):
    def test_every_function_agrees_with_bumble_on_random_inputs(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'vectors.txt')
            subprocess.run([PYTHON, os.path.join(HERE, 'crypto_vectors.py'), path, '32'], check=True, timeout=120)
            env = dict(os.environ, HCIGATT_CRYPTO_VECTORS=path)
            p = subprocess.run(['swift', 'test', '--skip-build', '--filter', 'BumbleCrossCheckTests'],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
            out = p.stdout + p.stderr
            self.assertEqual(p.returncode, 0, out[-4000:])
            self.assertIn('crypto cross-check: 256 vectors agree with bumble.crypto', out)
            self.assertIn('everyFunctionAgreesWithBumble() passed', out)


if __name__ == '__main__':
    unittest.main()
