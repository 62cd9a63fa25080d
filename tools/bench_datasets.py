"""How fast ``paddle.dataset`` readers go through a full train split of real-size files.

Writes synthetic files with the real files' formats, sample counts and sizes (``tools/dataset_files.py``)
into a temporary folder, then, per module in a fresh process, times the first full pass over the train
split (finding the file, its MD5, building dictionaries, parsing: everything a script pays for once) and a
second pass (what each later epoch costs); importing minifluid is not counted. Prints one JSON line:
per module the samples, the seconds of each pass, the samples/s of the first, and the CPU seconds of
each pass (the process's own, threads included), which vary less than wall time on a shared machine.

Run: python tools/bench_datasets.py [--scale 1.0] [--modules imdb,cifar,...] [--keep DIR]
flowers decodes and resizes JPEGs (Pillow); its scale is a tenth of the others' unless --flowers-scale.
``reference_cpu_s`` is the CPU time of a fixed workload (inflating 200 MB of zlib data, sorting 4 million
floats), measured before and after the modules: on a shared machine whose cores are oversubscribed every
CPU figure grows with it, so compare figures across runs as multiples of it.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import dataset_files  # noqa: E402

# module -> the expression that makes its train reader, as a book script would write it
READERS = {
    'uci_housing': 'D.uci_housing.train()',
    'cifar': 'D.cifar.train10()',
    'imdb': 'D.imdb.train(D.imdb.word_dict())',
    'imikolov': 'D.imikolov.train(D.imikolov.build_dict(), 5)',
    'movielens': 'D.movielens.train()',
    'conll05': 'D.conll05.test()',
    'wmt14': 'D.wmt14.train(30000)',
    'wmt16': 'D.wmt16.train(10000, 10000)',
    'mnist': 'D.mnist.train()',
    'flowers': 'D.flowers.train(use_xmap=False)',
}

CHILD = """
import json, sys, time, warnings
warnings.simplefilter('ignore')
import minifluid.dataset as D
t0, c0 = time.perf_counter(), time.process_time()
reader = %s
n = sum(1 for _ in reader())
t1, c1 = time.perf_counter(), time.process_time()
m = sum(1 for _ in reader())
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps([n, t1 - t0, t2 - t1, c1 - c0, c2 - c1]))
"""


REFERENCE = """
import time, zlib, numpy as np
data = zlib.compress(np.random.RandomState(0).randint(0, 16, 1 << 20).astype(np.uint8).tobytes() * 200, 1)
c0 = time.process_time()
zlib.decompress(data)
np.sort(np.random.RandomState(1).random_sample(1 << 22))
print(time.process_time() - c0)
"""


def reference():
    out = subprocess.run([sys.executable, '-c', REFERENCE], capture_output=True, text=True, check=True).stdout
    return round(float(out), 2)


def run_module(module, root):
    env = dict(os.environ, MINIFLUID_DATA_HOME=root)
    env['PYTHONPATH'] = os.path.dirname(HERE) + os.pathsep + env.get('PYTHONPATH', '')
    out = subprocess.run([sys.executable, '-c', CHILD % READERS[module]], env=env, capture_output=True, text=True,
                         check=True).stdout
    n, first, second, first_cpu, second_cpu = json.loads(out.strip().splitlines()[-1])
    return {'samples': n, 'first_pass_s': round(first, 2), 'second_pass_s': round(second, 2),
            'samples_per_s': round(n / first), 'first_pass_cpu_s': round(first_cpu, 2),
            'second_pass_cpu_s': round(second_cpu, 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--scale', type=float, default=1.0, help='1.0 = the real files\' sizes')
    parser.add_argument('--flowers-scale', type=float, default=None)
    parser.add_argument('--modules', default=','.join(READERS))
    parser.add_argument('--keep', default=None, help='write the files here and keep them')
    args = parser.parse_args()
    modules = [m for m in args.modules.split(',') if m]
    root = args.keep or tempfile.mkdtemp(prefix='mf_bench_datasets_')
    result = {'scale': args.scale, 'reference_cpu_s': [reference()]}
    try:
        for module in modules:
            scale = args.scale if module != 'flowers' else (args.flowers_scale or args.scale / 10)
            t0 = time.perf_counter()
            dataset_files.synth(root, [module], scale=scale)
            written = round(time.perf_counter() - t0, 1)
            result[module] = dict(run_module(module, root), write_s=written)
            if module == 'flowers':
                result[module]['scale'] = scale
        result['reference_cpu_s'].append(reference())
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result))


if __name__ == '__main__':
    main()
