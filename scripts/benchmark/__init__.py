"""Benchmarks: starts the servers, drives them with wrk and k6, prints tables, writes JSON and a PNG chart.

    ./scripts/bench [--runs 3] [--seconds 5] [--flood-seconds 15] [--out bench-results] [--update-docs]

Every figure is the median of several runs. The machine is shared and noisy, so each throughput is also
given as a ratio to a baseline measured in the same run, the scenarios interleaved: the stack's ceiling (a
bare WSGI app with a fixed body on the very same server setup, scripts/ceiling.py) and the in-memory GET.
With two or more CPUs every server, all its workers included, runs on CPU 0 and the load generators
(wrk, k6, the bench's own posting threads) on CPU 1, so that the load does not steal the server's core.

The Redis store is measured too, with WEB_CONCURRENCY=1 and 2, against a redis-server of the bench's own
on a free loopback port, without persistence, on the load's CPU: on CPU 0 it would take its own work out
of the one core the in-memory rows have to themselves (in production Redis runs elsewhere). With 2 CPUs,
WEB_CONCURRENCY=2 cannot show scaling: its rows give what a second process costs on the same core.

k6 runs the project's scripts and the challenge's own two (scripts/k6/); a row whose thresholds were
crossed says in how many runs. ab makes 20,000 requests 1000 at a time, each on a connection of its own.
Every row also gives the CPU time that the server (its workers together) and redis-server spent per
request, read from /proc: a throughput ratio holds only while the server is the limit, CPU per request
whatever the limit (k6 at 100 VUs can use its whole CPU before the server does). From it, throughput is
projected per core count, on paper. The overload rows are measured on a fresh server each run: ten clients
posting the 500 kB-class file back to back (peak RSS, share of 503s, reads meanwhile), and reads while a
body of the default size limit is posted, one at a time.

Servers and redis-server are started with the harness that the tests use too (growth_gevent.testing).
"""
