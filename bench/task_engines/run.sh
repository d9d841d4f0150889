#!/usr/bin/env bash
# The measurements behind docs/mcp.md's "Scaling out: the engine": each
# candidate engine for a shared task store in a throwaway venv of its own
# (on top of acor's `mcp` extra), against real servers started here
# (PostgreSQL: initdb, pg_ctl; Redis: redis-server, when on the PATH).
# Prints install weight, import cost, create/get latency, what happens to a
# job whose worker is SIGKILLed, and how fast a cancel from another process
# lands. Not part of `make bench`: it downloads from the package index and
# takes about ten minutes. Run from the checkout: bash bench/task_engines/run.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PYTHON=${PYTHON:-python3}
WORK=${SO_WORK:-$(mktemp -d /tmp/acor-engines.XXXXXX)}
ROUNDS=${SO_ROUNDS:-300}
mkdir -p "$WORK/out"
export SO_OUT="$WORK/out" PYTHONPATH="$HERE"
declare -A PKG=([procrastinate]="procrastinate==3.10.0" [dbos]="dbos==3.4.0"
                [docket]="pydocket==0.27.0")
declare -A MOD=([procrastinate]=procrastinate [dbos]=dbos [docket]=docket)

echo "== venvs in $WORK"
if [ -x "$WORK/docket/bin/python" ]; then
    echo "(kept from an earlier run: weights not measured again)"
else
    "$PYTHON" -m venv "$WORK/base"
    "$WORK/base/bin/python" -m pip install -q --upgrade pip
    "$WORK/base/bin/python" -m pip install -q "$REPO[mcp]"
    "$WORK/base/bin/python" -m pip list --format=freeze | sort > "$WORK/base.txt"
    site() { echo "$1"/lib/python3*/site-packages; }
    base_mb=$(du -sm $(site "$WORK/base") | cut -f1)
    for name in procrastinate dbos docket; do
        cp -a "$WORK/base" "$WORK/$name"
        "$WORK/$name/bin/python" -m pip install -q "${PKG[$name]}"
        "$WORK/$name/bin/python" -m pip list --format=freeze | sort > "$WORK/$name.txt"
        added=$(comm -13 "$WORK/base.txt" "$WORK/$name.txt")
        echo "$name: +$(echo "$added" | wc -l) distributions," \
             "+$(( $(du -sm $(site "$WORK/$name") | cut -f1) - base_mb )) MB" \
             "over acor[mcp] (${base_mb} MB): $(echo $added)"
        # This machine may set PYTHONDONTWRITEBYTECODE: without .pyc files every
        # import would compile.
        "$WORK/$name/bin/python" -m compileall -q $(site "$WORK/$name") >/dev/null 2>&1 || true
    done
fi

echo "== import cost"
"$WORK/base/bin/python" "$HERE/imports.py" \
    $(for n in procrastinate dbos docket; do echo "$n=$WORK/$n/bin/python:${MOD[$n]}"; done)

echo "== servers"
PGDIR="$WORK/pg"; PGPORT=${SO_PGPORT:-55433}
as_db_user() { if [ "$(id -u)" = 0 ]; then runuser -u "${SO_PGUSER:-postgres}" -- "$@"; else "$@"; fi; }
mkdir -p "$PGDIR"; [ "$(id -u)" = 0 ] && chown "${SO_PGUSER:-postgres}" "$PGDIR"
as_db_user initdb -D "$PGDIR/data" -A trust -U acor >/dev/null
as_db_user pg_ctl -D "$PGDIR/data" -l "$PGDIR/log" -w start \
    -o "-p $PGPORT -k $PGDIR -c listen_addresses=''" >/dev/null
REDIS_PID=""
stop_servers() {
    as_db_user pg_ctl -D "$PGDIR/data" -m fast stop >/dev/null || true
    [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null || true
}
trap stop_servers EXIT
for db in pq dbos; do psql -h "$PGDIR" -p $PGPORT -U acor -d postgres -qc "CREATE DATABASE $db"; done
export SO_URL="host=$PGDIR port=$PGPORT user=acor dbname=pq"
export SO_DBOS_URL="postgresql://acor@/dbos?host=$PGDIR&port=$PGPORT"
if command -v redis-server >/dev/null; then
    # appendfsync everysec, Redis's durable default: a write is on disk
    # within a second, not at the reply (Postgres: at the commit).
    redis-server --port ${SO_REDISPORT:-56380} --save "" --appendonly yes \
        --appendfsync everysec --dir "$WORK" >"$WORK/redis.log" 2>&1 &
    REDIS_PID=$!
    export SO_REDIS="redis://localhost:${SO_REDISPORT:-56380}/0"
    until redis-cli -p ${SO_REDISPORT:-56380} ping >/dev/null 2>&1; do sleep 0.1; done
fi
PQ="$WORK/procrastinate/bin/python $HERE/procrastinate_driver.py"
DK="$WORK/docket/bin/python $HERE/docket_driver.py"
DB="$WORK/dbos/bin/python $HERE/dbos_driver.py"
$PQ schema

echo "== create/get latency, $ROUNDS rounds each"
"$WORK/base/bin/python" "$HERE/embedded_driver.py" "$ROUNDS"
$PQ latency "$ROUNDS"
$DB latency "$ROUNDS" 2>/dev/null | grep engine
[ -n "$REDIS_PID" ] && $DK latency "$ROUNDS"

echo "== a worker SIGKILLed mid-job"
started() { until [ -s "$SO_OUT/$1.log" ]; do sleep 0.05; done; }
restarted() { # the second start's time, or "never" after $2 s
    local deadline=$(( $(date +%s) + $2 ))
    while [ "$(wc -l < "$SO_OUT/$1.log")" -lt 2 ]; do
        [ "$(date +%s)" -ge "$deadline" ] && { echo never; return; }
        sleep 0.05
    done
    tail -1 "$SO_OUT/$1.log" | cut -d' ' -f1
}
after() { # second start, kill time, how long it was waited for
    if [ "$1" = never ]; then echo "not taken over within $3 s"
    else python3 -c "print(f'taken over {$1 - $2:.1f} s after the kill')"; fi; }
for n in 1 2 3; do
    psql -h "$PGDIR" -p $PGPORT -U acor -d pq -qc \
        "DELETE FROM procrastinate_jobs; DELETE FROM procrastinate_workers"
    $PQ worker noreap >/dev/null 2>&1 & A=$!
    $PQ defer pq-kill$n 120; started pq-kill$n
    $PQ worker reap >/dev/null 2>&1 & B=$!
    sleep 2; killed=$(date +%s.%N); kill -9 $A; wait $A 2>/dev/null || true
    echo "procrastinate run $n: $(after "$(restarted pq-kill$n 60)" "$killed" 60)"
    kill -9 $B; wait $B 2>/dev/null || true
done
if [ -n "$REDIS_PID" ]; then
    for n in 1 2 3; do
        redis-cli -p ${SO_REDISPORT:-56380} flushall >/dev/null
        $DK worker >/dev/null 2>&1 & A=$!
        $DK add dk-kill$n 120; started dk-kill$n
        $DK worker >/dev/null 2>&1 & B=$!
        sleep 2; killed=$(date +%s.%N); kill -9 $A; wait $A 2>/dev/null || true
        echo "docket run $n: $(after "$(restarted dk-kill$n 60)" "$killed" 60)"
        kill -9 $B; wait $B 2>/dev/null || true
    done
fi
$DB run exA db-kill 120 >/dev/null 2>&1 & A=$!
started db-kill
$DB serve exB 45 >/dev/null 2>&1 & B=$!
sleep 2; killed=$(date +%s.%N); kill -9 $A; wait $A 2>/dev/null || true
echo "dbos, another executor serving: $(after "$(restarted db-kill 40)" "$killed" 40)"
wait $B || true
$DB recover exC exA >/dev/null 2>&1 & C=$!
asked=$(date +%s.%N)
echo "dbos, recovery of exA asked of exC: $(after "$(restarted db-kill 30)" "$asked" 30 | sed 's/the kill/the request/')"
kill -9 $C; wait $C 2>/dev/null || true

echo "== a cancel from another process"
psql -h "$PGDIR" -p $PGPORT -U acor -d pq -qc "DELETE FROM procrastinate_jobs"
$PQ worker noreap >/dev/null 2>&1 & A=$!
$PQ cancel pq-cancel
kill -9 $A; wait $A 2>/dev/null || true
if [ -n "$REDIS_PID" ]; then
    $DK worker >/dev/null 2>&1 & A=$!
    $DK cancel dk-cancel
    kill -9 $A; wait $A 2>/dev/null || true
fi
$DB run exD db-cancel 120 >/dev/null 2>&1 & A=$!
started db-cancel
$DB cancel db-cancel
kill -9 $A; wait $A 2>/dev/null || true
echo "== done; the venvs stay in $WORK"
