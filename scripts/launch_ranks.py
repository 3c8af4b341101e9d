#!/usr/bin/env python3
"""A plain launcher for machines without torchrun: starts N processes of one command line with
torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT: a free port unless
MASTER_PORT is set), waits at most --deadline seconds for all of them, and exits with the first
non-zero status (or 124 when the deadline passed; what is still running is killed).

    scripts/launch_ranks.py --nproc 8 -- build/cli/replay 'traces/rank{rank}.json' --backend cpu --out out
"""
import argparse, os, socket, subprocess, sys, time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(nproc, command, deadline, log_dir=None, env_extra=None, on_poll=None):
    """Starts the ranks; returns (exit codes by rank, seconds taken). Logs go to log_dir/rankN.log;
    env_extra: {rank: {VAR: value}}; on_poll(procs) is called every 0.1 s (tests kill a rank)."""
    port = os.environ.get("MASTER_PORT") or str(free_port())
    procs, logs = [], []
    start = time.monotonic()
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nproc), LOCAL_RANK=str(rank),
                   MASTER_ADDR=os.environ.get("MASTER_ADDR", "127.0.0.1"), MASTER_PORT=port)
        env.update((env_extra or {}).get(rank, {}))
        out = open(os.path.join(log_dir, f"rank{rank}.log"), "w") if log_dir else None
        logs.append(out)
        procs.append(subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT if out else None))
    codes = [None] * nproc
    while None in codes and time.monotonic() - start < deadline:
        for i, p in enumerate(procs):
            if codes[i] is None:
                codes[i] = p.poll()
        if on_poll:
            on_poll(procs)
        time.sleep(0.1)
    for i, p in enumerate(procs):
        if codes[i] is None:
            p.kill()
            p.wait()
            codes[i] = 124
    for out in logs:
        if out:
            out.close()
    return codes, time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nproc", type=int, required=True, help="ranks to start")
    parser.add_argument("--deadline", type=float, default=3600, help="seconds before every rank is killed")
    parser.add_argument("--log-dir", help="write each rank's output to LOG_DIR/rankN.log")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    a = parser.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        parser.error("give the command after --")
    codes, seconds = launch(a.nproc, command, a.deadline, a.log_dir)
    for rank, code in enumerate(codes):
        if code:
            print(f"launch_ranks: rank {rank} exited with {code}", file=sys.stderr)
    print(f"launch_ranks: {a.nproc} ranks in {seconds:.1f} s", file=sys.stderr)
    sys.exit(next((c for c in codes if c), 0))


if __name__ == "__main__":
    main()
