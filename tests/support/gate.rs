//! The real binary, run with a clean environment and measured on the monotonic clock.

use super::pki::TestCa;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The outcome of one run of the binary.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// How long the kernel kept the gate's threads (summed: sampled, and as the kernel sums them
    /// at exit where taskstats answers) and the measuring thread waiting for a CPU while the gate ran, and how long the gate took to reach its main() (placed by its
    /// first log line's own clock): time a loaded machine took from it, which no program can keep
    /// a wall-clock promise through. Zero on an idle machine, so the timed assertions that
    /// excuse it are as strict there as without it.
    pub starved: Duration,
    /// When the gate was seen to write its last line and to exit, and the kernel's account of
    /// its process at exit: what a failed timing assertion shows to tell a slow gate from a
    /// slow machine.
    pub timeline: String,
}

impl Run {
    /// The wall time the gate ran, less what the machine's load took from it ([`Run::starved`]):
    /// what an upper bound on the gate's own time may be checked against on a loaded machine.
    pub fn running(&self) -> Duration {
        self.elapsed.saturating_sub(self.starved)
    }

    pub fn log(&self) -> &str {
        &self.stderr
    }

    /// Stdout as the one JSON object `--output json` prints.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wait-for-idp")
}

/// The binary with a clean environment: no proxies, no WAIT_FOR_IDP_* from the developer's shell;
/// and SIGTERM and SIGINT at their defaults, whatever the suite inherited. A suite started in the
/// background by a shell without job control (`bash .ci/run &`) inherits SIGINT ignored, which
/// the gate rightly keeps ignored; a test that wants that sets it itself.
pub fn gate() -> Command {
    let mut cmd = Command::new(bin());
    cmd.env_clear();
    // SAFETY: signal(2) is async-signal-safe, and the closure touches nothing else.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// The gate for `issuer`, trusting the test CA.
pub fn gate_for(ca: &TestCa, issuer: &str) -> Command {
    let mut cmd = gate();
    cmd.args(["--issuer", issuer, "--ca-file", &ca.ca_arg()]);
    cmd
}

/// The time `/proc/{task}/schedstat` says a thread has waited on a run queue (its second
/// field, in nanoseconds); zero when the kernel does not keep it.
pub fn run_delay(task: &str) -> Duration {
    let text = std::fs::read_to_string(format!("/proc/{task}/schedstat")).unwrap_or_default();
    Duration::from_nanos(text.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0))
}

/// Run-queue waits of a running process's threads, kept per thread at their latest value (a
/// thread that has ended keeps its last reading).
#[derive(Default)]
pub struct Starvation(std::collections::HashMap<String, Duration>);

impl Starvation {
    pub fn sample(&mut self, pid: u32) {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return };
        for task in tasks.flatten() {
            let tid = task.file_name().to_string_lossy().into_owned();
            let delay = run_delay(&format!("{pid}/task/{tid}"));
            let seen = self.0.entry(tid).or_default();
            *seen = (*seen).max(delay);
        }
    }

    pub fn total(&self) -> Duration {
        self.0.values().sum()
    }
}

/// The gate's own clock on a log line, `wait-for-idp +1.234s ...`: how long after its start it
/// wrote the line.
fn own_clock(line: &str) -> Option<Duration> {
    let rest = line.strip_prefix("wait-for-idp +")?;
    Duration::try_from_secs_f64(rest.split_once("s ")?.0.parse().ok()?).ok()
}

/// Whether the child has exited, without reaping it: its threads' run-queue waits stay readable
/// until it is reaped.
fn exited(pid: u32) -> bool {
    // SAFETY: waitid(2) on our own child with WNOWAIT writes only into `info`.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOWAIT | libc::WNOHANG;
    let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    // SAFETY: si_pid is set by waitid when a child changed state, and stays 0 otherwise.
    rc == 0 && unsafe { info.si_pid() } != 0
}

/// Runs and measures, on the monotonic clock, killing the child after `limit` so a broken
/// build cannot hang the suite. It also measures how long the machine kept the gate (and this
/// thread) waiting for a CPU ([`Run::starved`]).
pub fn run_with_limit(mut cmd: Command, limit: Duration) -> Run {
    // This thread's own waits count only where they stretch the measurement: around the spawn,
    // and between the gate's exit and its noticing it (the last poll); not while it polls.
    let own = || run_delay("thread-self");
    let own_before = own();
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn wait-for-idp");
    let own_starved = own().saturating_sub(own_before);
    // Either stream may have been redirected elsewhere by the test (a file, /dev/full).
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.map(|mut o| o.read_to_string(&mut s));
        s
    });
    let err_thread = std::thread::spawn(move || {
        let (mut s, mut first_word, mut last_line) = (String::new(), None, None);
        if let Some(e) = stderr {
            let mut e = BufReader::new(e);
            while e.read_line(&mut s).is_ok_and(|n| n > 0) {
                first_word = first_word.or_else(|| own_clock(&s).map(|at| (Instant::now(), at)));
                last_line = Some(Instant::now());
            }
        }
        (s, first_word, last_line)
    });
    let Watched { status, starved, at_exit, noticed } = watch(&mut child, started, limit);
    let bookkeeping = noticed.elapsed();
    let (stderr, first_word, last_line) = err_thread.join().unwrap();
    // Before its main() the gate can do nothing: a loaded machine's fork, exec and page-ins
    // (seconds, once, under a compiling cargo) are not its run. Its start is placed by its first
    // log line: received at `heard`, stamped `+at` on its own clock, so it started no later than
    // heard - at; what precedes that is excused, and an idle machine loses only milliseconds.
    let before_main = first_word.map_or(Duration::ZERO, |(heard, at)| heard.saturating_duration_since(started + at));
    let elapsed = noticed - started;
    let starved = starved + own_starved + before_main.min(elapsed);
    let heard =
        |at: Option<Instant>| at.map_or("never".into(), |at| format!("{:?}", at.saturating_duration_since(started)));
    let timeline = format!(
        "first line heard {}, last {}, exit noticed {:?} after the spawn (the test's own reading after it, {bookkeeping:?}, not counted); {at_exit}",
        heard(first_word.map(|(heard, _)| heard)),
        heard(last_line),
        elapsed
    );
    Run { code: status.code(), stdout: out_thread.join().unwrap(), stderr, elapsed, starved, timeline }
}

/// Polls the child until it exits (or kills it after `limit` from `started`), sampling its
/// threads' run-queue waits; returns its status and what the machine's load took from it (over
/// its whole life) and from this thread's noticing its exit.
pub fn watch(child: &mut Child, started: Instant, limit: Duration) -> Watched {
    let own = || run_delay("thread-self");
    let (mut starvation, mut own_starved, mut last_poll) = (Starvation::default(), Duration::ZERO, own());
    let mut at_exit = String::from("killed at the limit");
    let mut noticed = None;
    loop {
        starvation.sample(child.id());
        if exited(child.id()) {
            noticed = Some(Instant::now());
            starvation.sample(child.id());
            own_starved = own().saturating_sub(last_poll);
            at_exit = account(child.id());
            if let Some(all) = cpu_delay_of_process(child.id()) {
                at_exit.push_str(&format!("; its threads waited {all:?} for a CPU in all (taskstats)"));
            }
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        last_poll = own();
        std::thread::sleep(Duration::from_millis(2));
    }
    // The kernel's own sum covers the threads that ended between two samples (the log's, the
    // delivery's: a thread's wait is added to its reading only once it runs, so one that waits
    // long, runs a moment and ends is all but never seen by sampling). Read where it can be.
    let gate = cpu_delay_of_process(child.id()).map_or(starvation.total(), |all| all.max(starvation.total()));
    let noticed = noticed.unwrap_or_else(Instant::now);
    Watched { status: child.wait().unwrap(), starved: gate + own_starved, at_exit, noticed }
}

/// What [`watch`] saw: the exit status, the CPU waits it excuses, the kernel's account at exit,
/// and when the exit was seen (before the bookkeeping that follows, which is the test's time).
pub struct Watched {
    pub status: std::process::ExitStatus,
    pub starved: Duration,
    pub at_exit: String,
    pub noticed: Instant,
}

/// The time all the threads of an exited, unreaped process (those that ended before it too)
/// waited for a CPU, as the kernel sums it for the thread group: taskstats over generic netlink
/// (`TASKSTATS_CMD_GET` with `TASKSTATS_CMD_ATTR_TGID`, `cpu_delay_total`), which the kernel
/// keeps whether or not `kernel.task_delayacct` is on. `None` where taskstats cannot be asked
/// (not root, no taskstats in the kernel): the sampled sum stands alone then.
pub fn cpu_delay_of_process(pid: u32) -> Option<Duration> {
    // Generic netlink: a message header (16 bytes), a genl header (4), then attributes.
    fn message(kind: u16, command: u8, attributes: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&(20 + attributes.len() as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&(libc::NLM_F_REQUEST as u16).to_ne_bytes());
        m.extend_from_slice(&[0; 8]); // sequence number, port id: the kernel's to fill
        m.extend_from_slice(&[command, 1, 0, 0]);
        m.extend_from_slice(attributes);
        m
    }
    fn attribute(kind: u16, data: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&(4 + data.len() as u16).to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(data);
        a.resize(a.len().next_multiple_of(4), 0);
        a
    }
    fn attributes(mut b: &[u8]) -> Vec<(u16, &[u8])> {
        let mut found = Vec::new();
        while b.len() >= 4 {
            let len = usize::from(u16::from_ne_bytes([b[0], b[1]]));
            if len < 4 || len > b.len() {
                break;
            }
            found.push((u16::from_ne_bytes([b[2], b[3]]) & 0x7fff, &b[4..len]));
            b = &b[len.next_multiple_of(4).min(b.len())..];
        }
        found
    }
    // SAFETY: a socket of our own, closed below; buffers are ours and sized as passed.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_GENERIC) };
    if fd < 0 {
        return None;
    }
    let ask = |request: Vec<u8>| -> Option<Vec<u8>> {
        let mut reply = vec![0u8; 4096];
        // SAFETY: as above.
        let sent = unsafe { libc::send(fd, request.as_ptr().cast(), request.len(), 0) };
        let got = unsafe { libc::recv(fd, reply.as_mut_ptr().cast(), reply.len(), 0) };
        // An error answer (type NLMSG_ERROR, 2) carries no attributes worth reading.
        (sent > 0 && got > 20 && u16::from_ne_bytes([reply[4], reply[5]]) != 2)
            .then(|| reply[20..got as usize].to_vec())
    };
    // The family's number by its name (GENL_ID_CTRL 16, CTRL_CMD_GETFAMILY 3, CTRL_ATTR_FAMILY_NAME 2,
    // CTRL_ATTR_FAMILY_ID 1); then the thread group's stats (TASKSTATS_CMD_GET 1,
    // TASKSTATS_CMD_ATTR_TGID 2), in TASKSTATS_TYPE_AGGR_TGID (5), TASKSTATS_TYPE_STATS (3).
    let delay = ask(message(16, 3, &attribute(2, b"TASKSTATS\0")))
        .and_then(|reply| {
            let family = attributes(&reply).into_iter().find(|(kind, _)| *kind == 1)?.1;
            Some(u16::from_ne_bytes(family.get(..2)?.try_into().ok()?))
        })
        .and_then(|family| ask(message(family, 1, &attribute(2, &pid.to_ne_bytes()))))
        .and_then(|reply| {
            let group = attributes(&reply).into_iter().find(|(kind, _)| *kind == 5)?.1;
            let stats = attributes(group).into_iter().find(|(kind, _)| *kind == 3)?.1;
            // struct taskstats: version, exit code, flag and nice, then cpu_count at 16 and
            // cpu_delay_total at 24, in nanoseconds.
            Some(Duration::from_nanos(u64::from_ne_bytes(stats.get(24..32)?.try_into().ok()?)))
        });
    // SAFETY: closing the socket opened above, once.
    unsafe { libc::close(fd) };
    delay
}

/// The kernel's account of an exited child not yet reaped (`/proc/{pid}/stat`): its CPU time in
/// user and system mode and its block I/O delay, in clock ticks (the delay only with
/// `kernel.task_delayacct`), and its threads' waits for a CPU as sampled.
fn account(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's closing parenthesis, from the third (state) on.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let field = |n: usize| fields.get(n - 3).copied().unwrap_or("?");
    format!("at exit: utime {} stime {} blkio-delay {} ticks", field(14), field(15), field(42))
}

/// The gate running in the background, its log read as it is written, so that a test acts when
/// the gate has been seen to do something (be refused, say): the gate's log is the event, not a
/// guess at how long a process takes to start on this machine.
pub struct LiveGate {
    child: Child,
    started: Instant,
    log: Arc<(Mutex<(String, bool)>, Condvar)>,
    reader: Option<std::thread::JoinHandle<()>>,
    stdout: Option<std::thread::JoinHandle<String>>,
}

impl LiveGate {
    pub fn spawn(mut cmd: Command) -> LiveGate {
        let started = Instant::now();
        let mut child = cmd.spawn().expect("spawn wait-for-idp");
        let log = Arc::new((Mutex::new((String::new(), false)), Condvar::new()));
        let (stderr, shared) = (child.stderr.take().unwrap(), log.clone());
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                shared.0.lock().unwrap().0.push_str(&(line + "\n"));
                shared.1.notify_all();
            }
            shared.0.lock().unwrap().1 = true;
            shared.1.notify_all();
        });
        let mut out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        });
        LiveGate { child, started, log, reader: Some(reader), stdout: Some(stdout) }
    }

    /// Blocks until the gate has logged `phrase`; fails if it exits first. No time bound of its
    /// own: the gate's --timeout is the bound.
    pub fn wait_logged(&self, phrase: &str) {
        let (lock, cond) = &*self.log;
        let mut state = lock.lock().unwrap();
        while !state.0.contains(phrase) {
            assert!(!state.1, "the gate ended without logging {phrase:?}:\n{}", state.0);
            state = cond.wait(state).unwrap();
        }
    }

    /// Waits for the gate to exit (killing it after 15 minutes, which only a hang reaches). Its
    /// threads' waits for a CPU are read from here on (cumulative: a thread that ended before
    /// this call is the only part not seen).
    pub fn finish(mut self) -> Run {
        let Watched { status, starved, at_exit, noticed } =
            watch(&mut self.child, self.started, Duration::from_secs(15 * 60));
        let elapsed = noticed - self.started;
        self.reader.take().unwrap().join().unwrap();
        let stdout = self.stdout.take().unwrap().join().unwrap();
        let stderr = std::mem::take(&mut self.log.0.lock().unwrap().0);
        let timeline = format!("exit noticed {elapsed:?} after the spawn; {at_exit}");
        Run { code: status.code(), stdout, stderr, elapsed, starved, timeline }
    }
}

impl Drop for LiveGate {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn run(cmd: Command) -> Run {
    run_with_limit(cmd, Duration::from_secs(60))
}

/// Runs the gate with these arguments added.
pub fn run_args(mut cmd: Command, args: &[&str]) -> Run {
    cmd.args(args);
    run(cmd)
}

/// Asserts the deadline promise: total run time within --timeout + 0.1 s, less the time a
/// loaded machine kept the gate from running at all ([`Run::starved`]).
pub fn assert_within(run: &Run, timeout: Duration) {
    assert!(
        run.running() <= timeout + Duration::from_millis(100),
        "ran {:?} ({:?} of it waiting for a CPU), over the promised {:?} + 0.1s ({})\n{}",
        run.elapsed,
        run.starved,
        timeout,
        run.timeline,
        run.stderr
    );
}

/// Asserts an exit code, showing the log when it differs.
#[track_caller]
pub fn assert_exit(run: &Run, code: i32) {
    assert_eq!(run.code, Some(code), "exit code; log:\n{}", run.log());
}

/// Asserts the log contains every one of `phrases`.
#[track_caller]
pub fn assert_logged(run: &Run, phrases: &[&str]) {
    for phrase in phrases {
        assert!(run.log().contains(phrase), "expected {phrase:?} in the log:\n{}", run.log());
    }
}
