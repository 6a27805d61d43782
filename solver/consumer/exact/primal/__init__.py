"""Primal side of the exact engine: solutions that are good before anything is proven.

:mod:`.start` (largest-first greedy, shed-and-refill at any cap),
:mod:`.local` (moves and swaps: towards a max load, levelling, items home),
:mod:`.lns` (windows of members re-solved exactly with CP-SAT).
"""
