//! A real mosquitto broker of a test's (or a bench's) own, on loopback ports,
//! keeping nothing on disk: the hosts' journals are what must make up for a
//! restart. Debian's package (`apt-get install mosquitto`; `.ci/run` installs
//! it); never the system service.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::child_guard::ChildGuard;

fn mosquitto_binary() -> PathBuf {
    for p in ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("mosquitto is not installed; install Debian's package (apt-get install mosquitto)");
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Broker {
    child: Option<ChildGuard>,
    /// The plain listener.
    pub port: u16,
    dir: PathBuf,
    extra: String,
}

impl Broker {
    pub fn start(dir: &Path) -> Broker {
        Broker::start_with(dir, "allow_anonymous true\n")
    }

    /// A broker with `extra` configuration lines (passwords, ACL, more
    /// listeners).
    pub fn start_with(dir: &Path, extra: &str) -> Broker {
        let mut b = Broker {
            child: None,
            port: free_port(),
            dir: dir.to_owned(),
            extra: extra.to_owned(),
        };
        b.restart();
        b
    }

    pub fn restart(&mut self) {
        let conf = self.dir.join("mosquitto.conf");
        std::fs::write(
            &conf,
            format!(
                "listener {} 127.0.0.1\npersistence false\nlog_dest stderr\n\
                 max_queued_messages 100000\n{}",
                self.port, self.extra
            ),
        )
        .unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("mosquitto.log"))
            .unwrap();
        self.child = Some(ChildGuard::new(
            Command::new(mosquitto_binary())
                .arg("-c")
                .arg(&conf)
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap(),
        ));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "mosquitto did not listen on {}: {}",
                self.port,
                std::fs::read_to_string(self.dir.join("mosquitto.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The broker's process id (for its CPU time).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the broker runs").id()
    }

    /// SIGKILL: the broker loses everything it held.
    #[allow(dead_code)]
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }
}

/// A certificate authority and a broker certificate it signed for
/// 127.0.0.1, made with the `openssl` command in `dir`.
#[allow(dead_code)]
pub struct Tls {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[allow(dead_code)]
impl Tls {
    pub fn make(dir: &Path) -> Tls {
        let run = |args: &str| {
            let out = Command::new("openssl")
                .args(args.split_whitespace())
                .current_dir(dir)
                .output()
                .expect("openssl is installed (apt-get install openssl)");
            assert!(
                out.status.success(),
                "openssl {args}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        run(
            "req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=eboard-test-ca \
             -keyout ca.key -out ca.pem",
        );
        run("req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout broker.key -out broker.csr");
        std::fs::write(
            dir.join("broker.ext"),
            "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        run(
            "x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
             -extfile broker.ext -out broker.pem",
        );
        Tls {
            ca: dir.join("ca.pem"),
            cert: dir.join("broker.pem"),
            key: dir.join("broker.key"),
        }
    }

    /// Configuration lines for one more listener, on TLS, at `port`.
    pub fn listener(&self, port: u16) -> String {
        format!(
            "listener {port} 127.0.0.1\ncertfile {}\nkeyfile {}\n",
            self.cert.display(),
            self.key.display()
        )
    }
}
