#!/usr/bin/env python3
# Copyright 2026 SMoE Lab authors.
"""Writes metrics_golden.json: the Skill-Mix metrics of the reference's
recorded gpt-4 runs (k = 3, generation rounds r2 and r3, 3 grading rounds,
5 combinations), computed from the *reference parser's* recorded values
(ref_points_0, ref_true_sentence_lim_pt) with the procedure of
aggregate_metrics.py (docs/skillmix.md 1.6), in float32
like numpy there. The C++ test recomputes the same numbers from the raw grader
outputs with our own parser. Usage: python3 make_metrics_golden.py"""
import json
import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


def rint(x):  # numpy rint: round half to even
    return float(round(x))


def score(q, k, method):
    s, r, total, c = sum(q[:k]), sum(q[k:]), k + 3, 3
    if method == 'all_points_earned_binary':
        return 1.0 if s + r == total else 0.0
    if method == 'all_skills_and_good_rest':
        return 1.0 if (s == k and r >= c - 1) else 0.0
    if method == 'average_over_skills_filtered':
        return s / k if r == c else 0.0
    if method == 'sum':
        return s + r
    if method == 'sum_over_skills':
        return s
    if method == 'rescaled_sum':
        return ((s + r) / total) ** total
    if method == 'average':
        return (s + r) / total
    if method == 'average_over_skills':
        return s / k
    if method == 'sum_over_skills_filtered':
        return s if r == c else 0.0
    if method == 'split_skills_vs_rest_binary':
        return (1.0 if s == k else 0.0) + (1.0 if r >= c - 1 else 0.0)
    raise ValueError(method)


METHODS = ['all_points_earned_binary', 'all_skills_and_good_rest',
           'average_over_skills_filtered', 'sum', 'sum_over_skills',
           'rescaled_sum', 'average', 'average_over_skills',
           'sum_over_skills_filtered', 'split_skills_vs_rest_binary']


def main():
    with open(os.path.join(HERE, 'reference_fixtures.json')) as f:
        fx = json.load(f)
    k = 3
    runs = ['k3_s10_vdefault_r2', 'k3_s10_vdefault_r3']
    graders = ['by_gpt-4_on_text_1_%d_gpt' % r for r in (1, 2, 3)]
    rows = {}
    for rec in fx['grading_records']:
        if rec['student_model'] != 'gpt-4':
            continue
        pts = rec['ref_points_0']
        pts = [float(p) for p in pts.split(',')] if pts else []
        if not pts:
            pts = [0.0] * (k + 3)
        pts = (pts + [0.0] * (k + 3))[:k + 3]
        pts[-1] = float(rec['ref_true_sentence_lim_pt'])
        rows[(rec['run'], rec['grader_dir'], rec['row'])] = [f32(p) for p in pts]
    n = 5
    # p[g][r][c][j]
    p = [[[rows[(run, gd, c)] for c in range(n)] for gd in graders] for run in runs]
    out = {'k': k, 'num_combinations': n, 'num_generations': len(runs),
           'num_gradings': len(graders), 'max': {}, 'mean': {}}
    for agg in ('max', 'mean'):
        for m in METHODS:
            per_c = []
            for c in range(n):
                gens = []
                for g in range(len(runs)):
                    q = [rint(f32(sum(p[g][r][c][j] for r in range(3)) / 3))
                         for j in range(k + 3)]
                    gens.append(score(q, k, m))
                per_c.append(max(gens) if agg == 'max' else sum(gens) / len(gens))
            mean = sum(per_c) / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in per_c) / (n - 1))
            out[agg][m] = {'mean': mean, 'se': sd / math.sqrt(n),
                           'per_combination': per_c}
    with open(os.path.join(HERE, 'metrics_golden.json'), 'w') as f:
        json.dump(out, f, indent=1)
        f.write('\n')


if __name__ == '__main__':
    main()
