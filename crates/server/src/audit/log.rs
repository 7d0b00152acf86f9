//! The log backend (`--audit-log-path`): events go through a bounded channel to one writer
//! thread that serializes them as JSON lines, flushes whenever the channel is drained, and
//! rotates the file as kube-apiserver's lumberjack logger does (`--audit-log-maxsize` in MB,
//! `--audit-log-maxbackup`, `--audit-log-maxage` in days; backups named
//! `<name>-<UTC time>.<ext>`).
//!
//! The writer wakes at most once per few milliseconds and writes everything buffered, so a busy
//! server pays one wake-up and one write per batch, not per event.
//!
//! Requests never wait for the disk: in `blocking` mode (the default, as upstream's log
//! backend) a request waits only while the channel is full; in `batch` mode an event that
//! finds the channel full is dropped and counted in `apiserver_audit_error_total`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;

use super::event::Event;
use crate::metrics;

/// How long the writer gathers events after a wake-up before writing them out: events reach
/// the file at most this much (plus the write) after they happen.
const BATCH_WAIT: Duration = Duration::from_millis(5);

/// How the backend treats a full buffer (`--audit-log-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// The request waits for room in the buffer.
    #[default]
    Blocking,
    /// As blocking: events are never dropped (write failures are logged, not returned to the
    /// request, since writing happens off the request path).
    BlockingStrict,
    /// An event finding the buffer full is dropped.
    Batch,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "blocking" => Ok(Mode::Blocking),
            "blocking-strict" => Ok(Mode::BlockingStrict),
            "batch" => Ok(Mode::Batch),
            other => Err(format!(
                "invalid audit log mode {other:?}, allowed modes are \"batch\", \"blocking\", \
                 \"blocking-strict\""
            )),
        }
    }
}

/// The log backend's settings.
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// The file, or `-` for standard output.
    pub path: PathBuf,
    /// Days to keep backups (0: no limit).
    pub max_age_days: u32,
    /// Backups to keep (0: no limit).
    pub max_backups: u32,
    /// Size in megabytes at which the file is rotated (0: never).
    pub max_size_mb: u64,
    /// What a full buffer does.
    pub mode: Mode,
    /// Events buffered between requests and the writer (`--audit-log-batch-buffer-size`).
    pub buffer_size: usize,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            path: PathBuf::from("-"),
            max_age_days: 0,
            max_backups: 0,
            max_size_mb: 0,
            mode: Mode::Blocking,
            buffer_size: 10_000,
        }
    }
}

/// The sending side, held by the server.
#[derive(Clone, Debug)]
pub struct LogBackend {
    tx: mpsc::Sender<Event>,
    mode: Mode,
}

impl LogBackend {
    /// Opens the log (creating directories) and starts the writer thread.
    pub fn start(opts: &LogOptions) -> anyhow::Result<Self> {
        let mut out = Output::open(opts)?;
        let (tx, mut rx) = mpsc::channel::<Event>(opts.buffer_size.max(1));
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                while let Some(ev) = rx.blocking_recv() {
                    out.write_event(&ev);
                    // Gather what arrives shortly after, so a busy server wakes the writer a
                    // few hundred times a second rather than once per event.
                    std::thread::sleep(BATCH_WAIT);
                    while let Ok(ev) = rx.try_recv() {
                        out.write_event(&ev);
                    }
                    out.flush();
                }
                out.flush();
            })?;
        Ok(LogBackend {
            tx,
            mode: opts.mode,
        })
    }

    /// Hands an event to the writer.
    pub async fn send(&self, ev: Event) {
        metrics::audit_event();
        match self.mode {
            Mode::Batch => {
                if self.tx.try_send(ev).is_err() {
                    metrics::audit_error("log");
                }
            }
            Mode::Blocking | Mode::BlockingStrict => {
                if self.tx.send(ev).await.is_err() {
                    metrics::audit_error("log");
                }
            }
        }
    }
}

/// Where events are written.
enum Output {
    Stdout(std::io::Stdout),
    File(RotatingFile),
}

impl Output {
    fn open(opts: &LogOptions) -> anyhow::Result<Self> {
        if opts.path.as_os_str() == "-" {
            return Ok(Output::Stdout(std::io::stdout()));
        }
        Ok(Output::File(RotatingFile::open(opts)?))
    }

    fn write_event(&mut self, ev: &Event) {
        let mut line = match serde_json::to_vec(ev) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(error = %e, "encoding an audit event");
                metrics::audit_error("log");
                return;
            }
        };
        line.push(b'\n');
        let result = match self {
            Output::Stdout(s) => s.lock().write_all(&line),
            Output::File(f) => f.write_line(&line),
        };
        if let Err(e) = result {
            tracing::error!(error = %e, "writing an audit event");
            metrics::audit_error("log");
        }
    }

    fn flush(&mut self) {
        let _ = match self {
            Output::Stdout(s) => s.lock().flush(),
            Output::File(f) => f.file.flush(),
        };
    }
}

/// A log file rotated by size, with backups bounded in number and age.
struct RotatingFile {
    path: PathBuf,
    file: BufWriter<File>,
    size: u64,
    max_size: u64,
    max_backups: u32,
    max_age: Option<Duration>,
}

impl RotatingFile {
    fn open(opts: &LogOptions) -> anyhow::Result<Self> {
        use anyhow::Context;
        if let Some(dir) = opts.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating audit log directory {}", dir.display()))?;
        }
        let file = open_append(&opts.path)
            .with_context(|| format!("opening audit log {}", opts.path.display()))?;
        let size = file.metadata().map_or(0, |m| m.len());
        Ok(RotatingFile {
            path: opts.path.clone(),
            file: BufWriter::with_capacity(64 * 1024, file),
            size,
            max_size: opts.max_size_mb.saturating_mul(1024 * 1024),
            max_backups: opts.max_backups,
            max_age: (opts.max_age_days > 0)
                .then(|| Duration::from_secs(u64::from(opts.max_age_days) * 86_400)),
        })
    }

    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.max_size > 0 && self.size > 0 && self.size + line.len() as u64 > self.max_size {
            self.rotate()?;
        }
        self.file.write_all(line)?;
        self.size += line.len() as u64;
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        let backup = backup_name(&self.path, jiff::Timestamp::now());
        std::fs::rename(&self.path, &backup)?;
        self.file = BufWriter::with_capacity(64 * 1024, open_append(&self.path)?);
        self.size = 0;
        self.prune();
        Ok(())
    }

    /// Removes backups past `max_backups` (oldest first) and older than `max_age`.
    fn prune(&self) {
        let (Some(dir), Some(stem)) = (self.path.parent(), self.path.file_stem()) else {
            return;
        };
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let prefix = format!("{}-", stem.to_string_lossy());
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        // Backup names sort by time: the timestamp is fixed-width.
        let mut backups: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p != &self.path
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&prefix))
            })
            .collect();
        backups.sort();
        let now = SystemTime::now();
        let keep_from = if self.max_backups > 0 {
            backups.len().saturating_sub(self.max_backups as usize)
        } else {
            0
        };
        for (i, b) in backups.iter().enumerate() {
            let too_old = self.max_age.is_some_and(|age| {
                std::fs::metadata(b)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| now.duration_since(t).ok())
                    .is_some_and(|d| d > age)
            });
            if i < keep_from || too_old {
                let _ = std::fs::remove_file(b);
            }
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// lumberjack's backup name: `audit.log` → `audit-2006-01-02T15-04-05.000.log`.
fn backup_name(path: &Path, t: jiff::Timestamp) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let stamp = t.strftime("%Y-%m-%dT%H-%M-%S%.3f").to_string();
    path.with_file_name(format!("{}-{stamp}{ext}", stem.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backups_are_named_as_lumberjack_names_them() {
        let t: jiff::Timestamp = "2025-03-04T05:06:07.089Z".parse().unwrap();
        assert_eq!(
            backup_name(Path::new("/var/log/audit.log"), t),
            PathBuf::from("/var/log/audit-2025-03-04T05-06-07.089.log")
        );
    }

    #[test]
    fn rotation_keeps_max_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut f = RotatingFile::open(&LogOptions {
            path: path.clone(),
            max_backups: 2,
            max_size_mb: 1,
            ..LogOptions::default()
        })
        .unwrap();
        let line = vec![b'x'; 400 * 1024];
        for _ in 0..12 {
            f.write_line(&line).unwrap();
        }
        f.file.flush().unwrap();
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"audit.log".to_string()), "{names:?}");
        assert!(names.len() <= 3, "{names:?}");
        assert!(std::fs::metadata(&path).unwrap().len() <= 1024 * 1024);
    }
}
