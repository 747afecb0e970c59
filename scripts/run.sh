#!/usr/bin/env bash
# make run: a Redis (yours via $REDIS_URL, else a private one under var/redis),
# three renderer replicas on :8080 :8081 :8082 sharing one consumer group and
# one SQLite file, and a game simulator playing three games at a human pace.
# Ctrl-C stops every process this script started, in order, and nothing else.
#
# RUN_CLUSTER=1 starts a private Redis Cluster instead: 3 masters, each with
# a replica (6 server processes, data and store under var/cluster/, wiped at
# each start), made with redis-cli --cluster create.
#
# Environment:
#   REDIS_URL       use this Redis/Valkey when it answers (else a private one)
#   RUN_CLUSTER     1: a private 3-master cluster with replicas (ignores REDIS_URL)
#   CODEMOJEX_REDIS_SERVER  redis-server or valkey-server (default: valkey-server when installed)
#   RUN_HTTP_PORT   first renderer port (default 8080; the others follow)
#   RUN_GAMES       games simulated (default 3)
#   RUN_RATE        simulator entries per second over all games (default 3)
#   RUN_SEED        simulator seed (default: the time, so each run plays new matches)
#   RUN_TAIL        1 (default) tails the logs here; 0 only prints where they are
#   RUN_REDIS_PORT  first port tried for a private Redis (default 6380; never 6379)
#   RUN_VAR, RUN_BIN  data and binary directories (default var/ and bin/)
set -euo pipefail

cd "$(dirname "$0")/.."
# Physical, absolute paths (no symlink, no ..): a later run knows what a
# SIGKILLed one left by their working directories (/proc/PID/cwd, a
# private Redis's is VAR/redis) and command lines.
ROOT=$(pwd -P)
VAR=${RUN_VAR:-$ROOT/var}
BIN=${RUN_BIN:-$ROOT/bin}
mkdir -p "$VAR/log" "$VAR/redis" "$BIN"
VAR=$(CDPATH='' cd -- "$VAR" && pwd -P)
BIN=$(CDPATH='' cd -- "$BIN" && pwd -P)
LOG=$VAR/log

HTTP_PORT=${RUN_HTTP_PORT:-8080}
GAMES=${RUN_GAMES:-3}
RATE=${RUN_RATE:-3}
TAIL=${RUN_TAIL:-1}

say() { printf 'run: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# --- processes we own -------------------------------------------------------
# Each child runs in its own session (setsid), so a Ctrl-C reaches only this
# script, which then stops them in order: writer, renderers, Redis.
declare -a PIDS=() NAMES=()
REDIS_PIDS=()
TAIL_PID=""
SLEEP_PID=""
STOPPING=0

PIDFILE=$VAR/run.pids
OWN_PIDFILE=0 # the list is this run's (not a live run's of the same VAR)

start() { # start NAME LOGFILE CMD...: run CMD in its own session, log to LOGFILE
	local name=$1 logfile=$2
	shift 2
	# The child writes its own pid to the list before it execs, so a run
	# SIGKILLed at any moment has listed every process it started.
	(
		printf '%s %s\n' "$BASHPID" "$name" >>"$PIDFILE"
		exec setsid "$@" >>"$logfile" 2>&1 </dev/null
	) &
	PIDS+=("$!")
	NAMES+=("$name")
	say "started $name (pid $!), log $logfile"
}

alive() { kill -0 "$1" 2>/dev/null; }

stop_group() { # stop_group NAME PID...: SIGTERM each process group, wait, then SIGKILL
	local name=$1 pid i left
	shift
	for pid in "$@"; do
		alive "$pid" && { kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; }
	done
	for ((i = 0; i < 100; i++)); do # up to 10 s
		left=0
		for pid in "$@"; do alive "$pid" && left=1; done
		((left)) || break
		sleep 0.1
	done
	for pid in "$@"; do
		if alive "$pid"; then
			say "$name (pid $pid) did not stop within 10s: SIGKILL"
			kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	done
}

cleanup() { # cleanup RC: stop everything, exit RC
	local rc=$1 i
	((STOPPING)) && return
	STOPPING=1
	# Stop everything even when our output is gone (a closed terminal, a
	# `| tee` that Ctrl-C ended): a failed message must not end the script.
	set +e
	say "stopping..."
	# The writer first, then the renderers together (they settle what is in
	# hand), Redis last so the renderers can still ack on their way out.
	local -a writer=() renderers=()
	for ((i = 0; i < ${#PIDS[@]}; i++)); do
		case ${NAMES[i]} in
		gamesim) writer+=("${PIDS[i]}") ;;
		redis) ;;
		*) renderers+=("${PIDS[i]}") ;;
		esac
	done
	((${#writer[@]})) && stop_group gamesim "${writer[@]}"
	((${#renderers[@]})) && stop_group renderer "${renderers[@]}"
	((${#REDIS_PIDS[@]})) && stop_group redis "${REDIS_PIDS[@]}"
	for pid in $TAIL_PID $SLEEP_PID; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	((OWN_PIDFILE)) && rm -f "$PIDFILE"
	say "stopped; logs are in $LOG"
	exit "$rc"
}
# Signals are ignored first thing on the way out: a Ctrl-C that lands as
# the run exits on its own (a process of ours died) ran 'exit 130' inside
# the EXIT trap before cleanup's first lines, which ended the script and
# left everything running.
trap 'rc=$?; trap "" INT TERM HUP PIPE; cleanup "$rc"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A run that was SIGKILLed could not stop its children (they run in their
# own sessions): stop them now, if they are still ours.
if [[ -f $PIDFILE ]]; then
	declare -a left_sim=() left_ren=() left_redis=() left_tail=()
	while read -r pid name; do
		cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || continue
		# A child listed just before the run was SIGKILLed may not have
		# exec'd its program yet: it is still the run's subshell (run.sh)
		# or setsid. Given up to 2 s to become what it was started as,
		# it is then known; until 7 Dec 2026 it was passed over and ran on
		# (a CI run of TestMakeRunAfterKilledRunRelative left gamesim so).
		for ((i = 0; i < 20; i++)); do
			[[ $name != run.sh && ($cmdline == *run.sh* || $cmdline == "setsid "*) ]] || break
			sleep 0.1
			cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || continue 2
		done
		cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
		case $name in
		run.sh) # the run itself: alive, it is no leftover but a run to stop first
			[[ $cwd == "$ROOT" && $cmdline == *run.sh* && $pid != "$$" ]] &&
				die "make run is already running on $VAR (pid $pid): stop it (Ctrl-C) first, or give this one another RUN_VAR"
			;;
		redis) [[ ($cwd == "$VAR/redis" || $cwd == "$VAR/cluster/"*) && $cmdline == *-server* ]] && left_redis+=("$pid") ;;
		gamesim) [[ $cwd == "$ROOT" && $cmdline == "$BIN/gamesim "* ]] && left_sim+=("$pid") ;;
		tail) [[ $cwd == "$ROOT" && $cmdline == "tail -n 0 -F $LOG/"* ]] && left_tail+=("$pid") ;;
		*) [[ $cwd == "$ROOT" && $cmdline == "$BIN/renderer "* ]] && left_ren+=("$pid") ;;
		esac
	done <"$PIDFILE"
	if ((${#left_sim[@]} + ${#left_ren[@]} + ${#left_redis[@]} + ${#left_tail[@]})); then
		say "stopping processes left over from an earlier run: ${left_sim[*]} ${left_ren[*]} ${left_redis[*]} ${left_tail[*]}"
		((${#left_sim[@]})) && stop_group gamesim "${left_sim[@]}"
		((${#left_ren[@]})) && stop_group renderer "${left_ren[@]}"
		((${#left_redis[@]})) && stop_group redis "${left_redis[@]}"
		((${#left_tail[@]})) && stop_group tail "${left_tail[@]}"
	fi
	rm -f "$PIDFILE"
fi
printf '%s run.sh\n' "$$" >"$PIDFILE"
OWN_PIDFILE=1

# --- build --------------------------------------------------------------------
command -v go >/dev/null || die "go is not on PATH: install Go 1.26 (https://go.dev/dl/)"
command -v setsid >/dev/null || die "setsid is not on PATH: install util-linux"
say "building binaries into $BIN/"
mkdir -p "$BIN"
go build -o "$BIN/" ./cmd/...

# --- Redis --------------------------------------------------------------------
ping_url() { # ping_url URL: exit 0 when a Redis answers PING there
	if [[ -x $BIN/feedctl ]]; then
		timeout 5 "$BIN/feedctl" -redis "$1" ping >/dev/null 2>&1
	elif command -v redis-cli >/dev/null; then
		[[ $(timeout 5 redis-cli -u "$1" ping 2>/dev/null) == PONG ]]
	else
		local hp=${1#*://}
		hp=${hp#*@}
		hp=${hp%%/*}
		ping_tcp "${hp%:*}" "${hp##*:}"
	fi
}

ping_tcp() { # ping_tcp HOST PORT: PING over bash's /dev/tcp
	local reply
	(
		exec 3<>"/dev/tcp/$1/$2" || exit 1
		printf 'PING\r\n' >&3
		IFS= read -r -t 2 reply <&3 || exit 1
		[[ $reply == "+PONG"* ]]
	) 2>/dev/null
}

server_pid() { # server_pid PORT: the process id the Redis on PORT reports (INFO server)
	local line
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'INFO server\r\n' >&3
		while IFS= read -r -t 2 line <&3; do
			line=${line%$'\r'}
			[[ $line == process_id:* ]] && printf '%s' "${line#process_id:}" && exit 0
		done
		exit 1
	) 2>/dev/null
}

ours() { # ours PORT PID: the server that answers on PORT is process PID, not one that took the port first
	[[ $(server_pid "$1") == "$2" ]]
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

redis_binary() {
	local b
	if [[ -n ${CODEMOJEX_REDIS_SERVER:-} ]]; then
		command -v "$CODEMOJEX_REDIS_SERVER" && return 0
		say "\$CODEMOJEX_REDIS_SERVER=$CODEMOJEX_REDIS_SERVER is not on PATH"
		return 1
	fi
	for b in valkey-server redis-server; do
		if command -v "$b" >/dev/null; then
			command -v "$b"
			return 0
		fi
	done
	return 1
}

check_version() { # warn when the server is older than we support
	local v major minor
	v=$("$1" --version | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p')
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%.*}
	case $1 in
	*valkey*) ((major > 7 || (major == 7 && minor >= 2))) || say "warning: valkey $v is older than 7.2, which is the oldest supported" ;;
	*) ((major >= 7)) || say "warning: redis $v is older than 7.0, which is the oldest supported" ;;
	esac
}

start_private_redis() {
	local bin=$1 port attempt i
	check_version "$bin"
	local first=${RUN_REDIS_PORT:-6380}
	port=$first
	# A port free at the probe can be taken before the server binds it (by
	# another program starting at the same moment): then take the next one.
	for ((attempt = 0; attempt < 5; attempt++)); do
		for (( ; port < first + 100; port++)); do
			[[ $port == 6379 ]] && continue
			port_free "$port" && break
		done
		((port < first + 100)) && port_free "$port" || die "no free port for a private Redis in $first..$((first + 99))"
		say "starting $(basename "$bin") on 127.0.0.1:$port, data (AOF) in $VAR/redis"
		: >"$LOG/redis.log"
		start redis "$LOG/redis.log" "$bin" --port "$port" --bind 127.0.0.1 --dir "$VAR/redis" \
			--appendonly yes --appendfsync everysec --save "" --daemonize no --protected-mode yes
		REDIS_PIDS+=("${PIDS[-1]}")
		REDIS_URL="redis://127.0.0.1:$port/0"
		for ((i = 0; i < 100; i++)); do
			ping_tcp 127.0.0.1 "$port" && ours "$port" "${PIDS[-1]}" && return 0
			alive "${PIDS[-1]}" || break
			sleep 0.1
		done
		if ! alive "${PIDS[-1]}" && grep -q 'Address already in use' "$LOG/redis.log"; then
			wait "${PIDS[-1]}" 2>/dev/null || true
			# Off the list of processes the run watches: left on it, the
			# run stopped everything at its first look ("redis exited").
			unset 'PIDS[-1]' 'NAMES[-1]' 'REDIS_PIDS[-1]'
			say "port $port was taken before the server could bind it: trying the next one"
			port=$((port + 1))
			continue
		fi
		break
	done
	tail -n 20 "$LOG/redis.log" >&2 || true
	die "the private Redis did not answer on port $port"
}

redis_cli() { # the client that goes with server binary $1
	local b
	case $1 in
	*valkey*) b="valkey-cli redis-cli" ;;
	*) b="redis-cli valkey-cli" ;;
	esac
	for c in $b; do
		command -v "$c" && return 0
	done
	return 1
}

start_private_cluster() { # 3 masters + 3 replicas from one server binary
	local bin=$1 cli port pid i n=0
	check_version "$bin"
	cli=$(redis_cli "$bin") || die "RUN_CLUSTER=1 needs redis-cli or valkey-cli (apt-get install -y redis-tools)"
	# A demo cluster: a new one each run, so that no nodes.conf of an
	# earlier run (with other ports) gets in the way.
	rm -rf "$VAR/cluster"
	mkdir -p "$VAR/cluster"
	local first=${RUN_REDIS_PORT:-7000} # bus port = port + 10000: stay <= 55535
	local -a ports=()
	for ((port = first; port <= 55535 && ${#ports[@]} < 6; port++)); do
		[[ $port == 6379 || $port == 16379 ]] && continue
		port_free "$port" && port_free $((port + 10000)) && ports+=("$port")
	done
	((${#ports[@]} == 6)) || die "no 6 free port pairs (p, p+10000) from $first up to 55535"
	say "starting a Redis Cluster ($(basename "$bin"), 3 masters + 3 replicas) on ports ${ports[*]}, data in $VAR/cluster"
	for port in "${ports[@]}"; do
		mkdir -p "$VAR/cluster/$port"
		start redis "$LOG/redis-$port.log" "$bin" --port "$port" --bind 127.0.0.1 --dir "$VAR/cluster/$port" \
			--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
			--appendonly yes --appendfsync everysec --save "" --daemonize no --protected-mode yes
		REDIS_PIDS+=("${PIDS[-1]}")
	done
	for ((n = 0; n < ${#ports[@]}; n++)); do
		port=${ports[n]} pid=${REDIS_PIDS[n]}
		for ((i = 0; i < 100; i++)); do
			ping_tcp 127.0.0.1 "$port" && ours "$port" "$pid" && break
			alive "$pid" || break
			sleep 0.1
		done
		ping_tcp 127.0.0.1 "$port" && ours "$port" "$pid" || die "cluster node on port $port did not answer (log: $LOG/redis-$port.log)"
	done
	n=0
	local -a addrs=()
	for port in "${ports[@]}"; do addrs+=("127.0.0.1:$port"); done
	"$cli" --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$LOG/cluster-create.log" 2>&1 ||
		{ tail -n 20 "$LOG/cluster-create.log" >&2; die "$(basename "$cli") --cluster create failed (log: $LOG/cluster-create.log)"; }
	for ((i = 0; i < 300; i++)); do # up to 30 s for every node to say ok
		n=0
		for port in "${ports[@]}"; do
			[[ $("$cli" -p "$port" cluster info 2>/dev/null) == *cluster_state:ok* ]] && n=$((n + 1))
		done
		((n == 6)) && break
		sleep 0.1
	done
	((n == 6)) || die "the cluster did not reach cluster_state:ok on every node within 30s"
	# go-redis's cluster form: every master named, the client finds the rest.
	REDIS_URL="redis://127.0.0.1:${ports[0]}?addr=127.0.0.1:${ports[1]}&addr=127.0.0.1:${ports[2]}"
	DB_PATH=$VAR/cluster/feed.db
}

DB_PATH=$VAR/feed.db
if [[ ${RUN_CLUSTER:-0} == 1 ]]; then
	bin=$(redis_binary) || die "RUN_CLUSTER=1 needs valkey-server or redis-server on PATH"
	start_private_cluster "$bin"
elif [[ -n ${REDIS_URL:-} ]] && ping_url "$REDIS_URL"; then
	say "using Redis at \$REDIS_URL ($REDIS_URL)"
else
	[[ -n ${REDIS_URL:-} ]] && say "nothing answers at \$REDIS_URL ($REDIS_URL): starting a private Redis"
	if ! bin=$(redis_binary); then
		if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
			say "installing Debian's redis-server with apt-get"
			export DEBIAN_FRONTEND=noninteractive
			apt-get install -y redis-server >"$LOG/apt.log" 2>&1 ||
				{ apt-get update >>"$LOG/apt.log" 2>&1 && apt-get install -y redis-server >>"$LOG/apt.log" 2>&1; } ||
				{ tail -n 20 "$LOG/apt.log" >&2; die "apt-get install redis-server failed (log: $LOG/apt.log)"; }
			bin=$(redis_binary) || die "redis-server is still not on PATH after installing it"
		else
			cat >&2 <<-'EOF'
				run: no Redis: nothing answers at $REDIS_URL and neither valkey-server nor redis-server is on PATH.
				run: install one of them, for example:
				run:   Debian/Ubuntu:  sudo apt-get install -y redis-server     (Redis >= 7.0)
				run:                   sudo apt-get install -y valkey-server    (Valkey >= 7.2)
				run:   Fedora:         sudo dnf install -y valkey
				run:   macOS:          brew install valkey
				run: or point REDIS_URL at a running Redis >= 7.0 / Valkey >= 7.2 and run `make run` again.
			EOF
			exit 1
		fi
	fi
	start_private_redis "$bin"
fi
export REDIS_URL

# --- renderers ------------------------------------------------------------------
declare -a PORTS=()
for i in 1 2 3; do
	port=$((HTTP_PORT + i - 1))
	port_free "$port" || die "port $port is taken: stop what listens there or set RUN_HTTP_PORT"
	PORTS+=("$port")
	# No load balancer probes these: Ctrl-C need not wait for one to drain.
	start "renderer r$i" "$LOG/r$i.log" "$BIN/renderer" -redis "$REDIS_URL" -db "$DB_PATH" \
		-http "127.0.0.1:$port" -group feed -consumer "r$i" -shutdown-delay 0
done

healthy() { # healthy PORT: GET / answers 200: the replica serves (/healthz answers while it starts)
	local status
	status=$(
		exec 2>/dev/null
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET / HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
		IFS= read -r -t 2 line <&3 && printf '%s' "$line"
	) || return 1
	[[ $status == *" 200"* ]]
}

for ((k = 0; k < 3; k++)); do
	pid=${PIDS[-3 + k]}
	ok=0
	for ((i = 0; i < 300; i++)); do # up to 30 s: the first start migrates the store
		if healthy "${PORTS[k]}"; then
			ok=1
			break
		fi
		alive "$pid" || break
		sleep 0.1
	done
	if ((!ok)); then
		tail -n 30 "$LOG/r$((k + 1)).log" >&2 || true
		die "renderer r$((k + 1)) is not healthy on :${PORTS[k]} (log: $LOG/r$((k + 1)).log)"
	fi
done

# --- the game simulator ----------------------------------------------------------
# A new seed per run: the same seed would replay the very same matches on top
# of the ones the previous run left in the streams and the store.
start gamesim "$LOG/gamesim.log" "$BIN/gamesim" -redis "$REDIS_URL" -games "$GAMES" -rate "$RATE" -events 0 \
	-seed "${RUN_SEED:-$(date +%s)}"

cat >&2 <<EOF

  codemojex feed is running. Open any replica:

$(for p in "${PORTS[@]}"; do printf '    http://localhost:%s/\n' "$p"; done)

  Games being played:
$(for ((g = 1; g <= GAMES; g++)); do printf '    http://localhost:%s/games/game-%s\n' "${PORTS[$(((g - 1) % 3))]}" "$g"; done)

  Status page: http://localhost:${PORTS[0]}/status
  Redis:       $REDIS_URL
  Logs:        $LOG/{r1,r2,r3,gamesim}.log$( ((${#REDIS_PIDS[@]})) && printf ' and %s/redis*.log' "$LOG")
  Press Ctrl-C to stop everything.

EOF

if [[ $TAIL == 1 ]]; then
	# Not in a session of its own, but a SIGKILLed run leaves it too; it is
	# listed before it execs, as start's children are.
	(
		printf '%s tail\n' "$BASHPID" >>"$PIDFILE"
		exec tail -n 0 -F "$LOG"/r1.log "$LOG"/r2.log "$LOG"/r3.log "$LOG"/gamesim.log
	) &
	TAIL_PID=$!
fi

# Run until Ctrl-C, or until one of our processes dies on its own.
while :; do
	for ((i = 0; i < ${#PIDS[@]}; i++)); do
		if ! alive "${PIDS[i]}"; then
			rc=0
			wait "${PIDS[i]}" || rc=$?
			say "${NAMES[i]} (pid ${PIDS[i]}) exited with status $rc; see its log"
			exit 1
		fi
	done
	sleep 1 &
	SLEEP_PID=$!
	wait "$SLEEP_PID" || true
done
