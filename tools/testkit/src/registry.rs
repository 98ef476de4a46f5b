//! A real OCI registry on loopback for tests: Debian's `docker-registry` (distribution 2.8),
//! started on a free `127.0.0.1` port with a temporary storage directory, no authentication,
//! and killed when the [`Registry`] is dropped.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The registry binary, unless `ESCEPINE_DOCKER_REGISTRY` names another.
const BINARY: &str = "/usr/bin/docker-registry";

/// A running registry; stopped on drop.
pub struct Registry {
    child: Option<Child>,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

fn other(msg: String) -> io::Error {
    io::Error::other(msg)
}

impl Registry {
    /// Start a registry on a free loopback port and wait until it answers `GET /v2/`.
    ///
    /// # Errors
    /// When the binary is missing, or the registry does not answer within 20 s (its log is
    /// quoted).
    pub fn start() -> io::Result<Self> {
        let binary = std::env::var_os("ESCEPINE_DOCKER_REGISTRY")
            .map_or_else(|| PathBuf::from(BINARY), PathBuf::from);
        let dir = tempfile::Builder::new()
            .prefix("escepine-registry-")
            .tempdir()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let storage = dir.path().join("storage");
        std::fs::create_dir(&storage)?;
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\n\
                 log:\n  level: warn\n  accesslog:\n    disabled: true\n\
                 storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                 http:\n  addr: {addr}\n",
                storage.display()
            ),
        )?;
        let log = std::fs::File::create(dir.path().join("registry.log"))?;
        let child = Command::new(&binary)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| other(format!("starting `{}`: {e}", binary.display())))?;
        let mut registry = Self {
            child: Some(child),
            addr,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if registry.get_v2().is_ok_and(|status| status == 200) {
                return Ok(registry);
            }
            if let Some(child) = registry.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    return Err(other(format!(
                        "the registry exited ({status}): {}",
                        registry.log()
                    )));
                }
            }
            if Instant::now() > deadline {
                return Err(other(format!(
                    "the registry did not answer on {addr} within 20 s: {}",
                    registry.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The status of `GET /v2/`.
    fn get_v2(&self) -> io::Result<u16> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        write!(
            s,
            "GET /v2/ HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )?;
        let mut head = [0u8; 12];
        s.read_exact(&mut head)?;
        std::str::from_utf8(&head[9..12])
            .ok()
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| other("not an HTTP answer".into()))
    }

    /// What the registry logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// `127.0.0.1:<port>`, as an image reference names the registry.
    pub fn addr(&self) -> String {
        self.addr.to_string()
    }

    /// The registry's storage root (`<storage>/docker/registry/v2/…`).
    pub fn storage_dir(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    /// Where the registry stores the blob `digest` (`sha256:<hex>`): alter it to make the
    /// registry serve a blob whose content lies about its digest.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        let prefix = hex.get(..2).unwrap_or(hex);
        blob_path_in(&self.storage_dir(), prefix, hex)
    }

    /// Stop the registry now (a later request finds nothing listening).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn blob_path_in(storage: &Path, prefix: &str, hex: &str) -> PathBuf {
    storage
        .join("docker/registry/v2/blobs/sha256")
        .join(prefix)
        .join(hex)
        .join("data")
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}
