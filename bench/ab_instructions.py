#!/usr/bin/python3
"""A/B of two codec_count binaries by instructions per item, counted by
callgrind: repeatable to the instruction on a host whose wall time drifts
1.4-2.5x within a minute (where ab_codec.py's ratios spread 0.6-2.0x).
Instructions are not time (cache misses, branch mispredictions and the
allocator's page faults do not show), so a change is judged on both:
this for what the code does, ab_codec.py for what it costs.

For each shape, operation and item count, each binary runs the operation
N and 2N times under callgrind with only the measured function collected
(--toggle-collect, bench/codec_count.cc); the difference is N operations
without the one-off costs of the first (the dynamic linker binding
symbols, scratch memory growing). callgrind is deterministic, so one run
per binary suffices.

Usage:
  /usr/bin/python3 bench/ab_instructions.py OLD_CODEC_COUNT NEW_CODEC_COUNT \
      [--shapes mixed,fewkeys,manykeys,stringheavy] [--ops encode,decode,top10] \
      [--items 10,500,5000]
Prints instructions per item (per operation for top10) of each binary and
new/old.
"""
import argparse
import re
import subprocess
import tempfile

# Operations per measurement: few enough that callgrind (~50x slower than
# the CPU) is quick.
RUNS_PER_ITEMS = {10: 100, 100: 20, 500: 5, 2000: 2, 5000: 2}


def collected(binary, shape, op, items, runs):
    with tempfile.NamedTemporaryFile(prefix="ab_instructions.") as out:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}",
               "--toggle-collect=rankwire::bench::*Measured*", binary, f"--shape={shape}",
               f"--op={op}", f"--items={items}", f"--iterations={runs}"]
        stderr = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    match = re.search(r"Collected : (\d+)", stderr)
    if not match:
        raise RuntimeError(f"no instruction count from: {' '.join(cmd)}\n{stderr}")
    return int(match.group(1))


def count(binary, shape, op, items):
    runs = RUNS_PER_ITEMS.get(items, max(1, 5000 // items))
    once = collected(binary, shape, op, items, runs)
    twice = collected(binary, shape, op, items, 2 * runs)
    per = runs if op == "top10" else runs * items
    return (twice - once) / per


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--shapes", default="mixed,fewkeys,manykeys,stringheavy")
    parser.add_argument("--ops", default="encode,decode,top10")
    parser.add_argument("--items", default="10,500,5000")
    args = parser.parse_args()
    print(f"{'shape/op/items':28s} {'old':>10s} {'new':>10s}  new/old  (instructions per item;"
          " per operation for top10)")
    for shape in args.shapes.split(","):
        for op in args.ops.split(","):
            for items in (int(x) for x in args.items.split(",")):
                old = count(args.old, shape, op, items)
                new = count(args.new, shape, op, items)
                print(f"{shape + '/' + op + '/' + str(items):28s} {old:10.0f} {new:10.0f}"
                      f"  {new / old:.3f}", flush=True)


if __name__ == "__main__":
    main()
