//! The daemon's configuration: a TOML file, environment overrides, defaults.
//!
//! Everything has a default, so the daemon runs with no file at all: it then
//! follows every DGT-looking port under `/dev/serial/by-id/`. The format is
//! documented in `docs/configuration.md`; [`DEFAULT_CONFIG_TOML`] is what
//! `eboard-bridge print-config` prints, and a test proves it parses back to
//! [`Config::default`].

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use eboard_protocols::family::{Family, PortMode};
use serde::Deserialize;

/// Environment variable overriding `[http] listen`.
pub const ENV_HTTP_LISTEN: &str = "EBOARD_BRIDGE_HTTP_LISTEN";
/// Environment variable overriding `[storage] data_dir`.
pub const ENV_DATA_DIR: &str = "EBOARD_BRIDGE_DATA_DIR";
/// Environment variable overriding `[discovery] enabled` (`true`/`false`).
pub const ENV_DISCOVERY: &str = "EBOARD_BRIDGE_DISCOVERY";
/// Shortest arbiter token accepted: the dashboard shows what players may not see
/// (Article 12.6), so the token must not be guessable.
pub const MIN_TOKEN_CHARS: usize = 16;
/// Overrides `http.arbiter_token` (keeps the secret out of the file).
pub const ENV_ARBITER_TOKEN: &str = "EBOARD_BRIDGE_ARBITER_TOKEN";
/// Overrides `[ebapi] listen`; `off` sets `[ebapi] enabled = false`.
pub const ENV_EBAPI_LISTEN: &str = "EBOARD_BRIDGE_EBAPI_LISTEN";

/// The defaults as a commented TOML file (`eboard-bridge print-config`).
pub const DEFAULT_CONFIG_TOML: &str = r#"# eboard-bridge configuration (TOML). Every key is optional; shown are the defaults.
# Environment overrides: EBOARD_BRIDGE_HTTP_LISTEN, EBOARD_BRIDGE_DATA_DIR,
# EBOARD_BRIDGE_DISCOVERY (true/false), EBOARD_BRIDGE_ARBITER_TOKEN,
# EBOARD_BRIDGE_EBAPI_LISTEN (an address, or off).

[http]
# Address the HTTP server (feeds for broadcasts and arbiters) listens on.
listen = "127.0.0.1:8080"
# Token for the arbiter dashboard (/arbiter/) and the operator API. When not set,
# a random token is made once and kept in <data_dir>/arbiter-token (mode 0600).
# arbiter_token = "a long random string"
# HTTP connections open at once, at most; the file limit may allow fewer, since
# descriptors are kept for the journal and the boards. Beyond it: 503, and a log line.
max_connections = 4096
# A client must send a request's headers within this long, ms (500..=300000).
request_timeout_ms = 10000
# A connection on which nothing moves either way is closed after this long, ms
# (at least 20000: streams send a keep-alive every 15 s).
idle_timeout_ms = 60000

[ebapi]
# A DGT LiveChess-compatible local API (REST and WebSocket under /api/v1.0), so
# lichess.org's and chess.com's e-board pages and LiveChess tools work with
# these boards unchanged (docs/ebapi.md). Public-feed level: no arbiter data.
enabled = true
# Clients expect port 1982. Loopback serves a browser on this machine; write
# "0.0.0.0:1982" for tools on other machines of the venue network.
listen = "127.0.0.1:1982"
# Browser origins allowed besides lichess.org, chess.com and loopback pages.
origins = []

[storage]
# The journal (every byte from every board, every event) and the games live here.
# The service unit's StateDirectory= creates /var/lib/eboard-bridge.
data_dir = "/var/lib/eboard-bridge"
# Rebuild the games from the journal at start (after a crash or a restart).
recover = true

[discovery]
# Follow every port under `dir` whose name looks like a DGT board
# (contains "DGT" or "Digital_Game_Technology"), and every board the udev rules
# link under `links_dir` (found by their USB ids; boards on USB chips other
# devices share are listened to first and followed only if they speak a board
# protocol), in addition to [[board]] ports.
enabled = true
dir = "/dev/serial/by-id"
links_dir = "/dev/chessboard"
# How often to look for newly plugged boards, in milliseconds.
rescan_ms = 2000

[device]
# Ask a quiet board for its clock this often (proves the link is alive), ms.
probe_ms = 2000
# A board that sends nothing for this long is declared offline and reopened, ms.
silence_timeout_ms = 6000
# Bus mode: poll every board for changes this often, ms.
bus_poll_ms = 300

# Boards with LEDs (docs/boards.md): light the last verified move, and the
# squares of an open set-up or displaced-pieces alert until it is resolved.
[leds]
# Not set: off in tournament mode (a [tournament] name or trf, or a [[pairing]]),
# where lights would disturb the players; on otherwise. A [[board]]'s `leds` wins.
# enabled = true

# Arbiter alerts (docs/alerts.md).
[alerts]
# Pieces off their squares with no move under way are reported after this long, ms
# (1000..=10000). A hand holding the mover's piece (a move under way) gets 10 s, or this if longer.
displaced_alert_ms = 6000

# The event, for the feeds (PGN tags, LiveChess-Cloud JSON); see docs/feeds.md.
# [tournament]
# name = "Hometown Open 2026"
# site = "Hometown"
# time_control = "5400+30"       # PGN TimeControl notation (e.g. "40/5400+30:1800+30", "180+2")
# regime = "supervised"          # or "unsupervised": rapid/blitz without adequate supervision (A.4/B.4)
# rounds = 9
# current_round = 3              # default 1
# delay_secs = 900               # public feeds lag this much (0..=3600); arbiters are live
# trf = "/srv/open/round3.trf"   # FIDE TRF export (Swiss-Manager) to take pairings from
#
# [[pairing]]                    # board -> players (wins over the TRF)
# board = 1
# white = { name = "Carlsen, Magnus", title = "GM", rating = 2830, fide_id = 1503014 }
# black = { name = "Doe, Jane", rating = 2105 }

# Push the round's PGN to a Lichess broadcast round (docs/lichess.md). The round
# must have no source URL; the token needs the study:write scope.
# [lichess]
# round_id = "AbCd1234"          # from the round's page (/broadcast/<t>/<r>/<id>)
# round = 3                      # the round pushed there (default: the current round at start)
# token_file = "/var/lib/eboard-bridge/lichess-token"   # the token alone, readable by the service
# url = "https://lichess.org"

# Several hosts as one venue through an MQTT broker (docs/mqtt.md). Off by default.
[mqtt]
enabled = false
# The broker: mqtt://host:port, or mqtts://host:port for TLS (default ports 1883, 8883).
broker = "mqtt://127.0.0.1:1883"
# The event's name in the topics (letters, digits, '.', '_', '-').
event = "event"
# This daemon's name in the topics, unique in the venue; the machine's host name when not set.
# host = "hall-a"
# Send this daemon's boards' events to the broker (from the journal: nothing is lost
# while the broker is out of reach).
publish = true
# Take every host's boards from the broker into this daemon's feeds and dashboard
# (the venue's aggregator).
subscribe = false
# username = "hall-a"
# password_file = "/etc/eboard-bridge/mqtt-password"   # the password alone, readable by the service
# ca_file = "/etc/eboard-bridge/mqtt-ca.pem"           # mqtts: the broker's CA (else the public roots)
# Seconds between pings while nothing else is sent (5..=600); a broker takes a
# host for gone after one and a half times this.
keep_alive_secs = 15
# Hosts whose clocks differ from this daemon's by more than this are reported, ms.
clock_tolerance_ms = 1000

# One [[board]] table per board (or per board behind a bus port). Examples:
#
# [[board]]
# port = "/dev/serial/by-id/usb-Digital_Game_Technology_DGT_Board_01025-if00"
# protocol = "dgt"        # a board family (docs/boards.md): "dgt" (one board on
#                         # the port), or "dgt-bus" (several on one line)
# number = 1              # board number in the round
# leds = true             # boards with LEDs: override [leds] enabled for this board
#
# [[board]]               # bus mode: several boards behind one port,
# port = "/dev/ttyUSB0"   # numbered by their serial number
# protocol = "dgt-bus"
# serial = "01025"
# number = 2
"#;

/// Why the configuration is unusable. Every message names the key or the
/// variable and says what to write instead.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "cannot read the configuration file {path}: {source}. Check the path given to --config"
    )]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path}: {message}Run `eboard-bridge print-config` to see every valid key with its default"
    )]
    Parse { path: PathBuf, message: String },
    #[error("{key}: {problem}")]
    Invalid { key: String, problem: String },
    #[error("environment variable {var}={value:?}: {problem}")]
    Env {
        var: &'static str,
        value: String,
        problem: String,
    },
}

/// The whole configuration.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub http: HttpConfig,
    pub ebapi: EbapiConfig,
    pub lichess: LichessConfig,
    pub storage: StorageConfig,
    pub discovery: DiscoveryConfig,
    pub device: DeviceConfig,
    pub alerts: AlertsConfig,
    pub leds: LedsConfig,
    pub mqtt: MqttConfig,
    #[serde(rename = "board")]
    pub boards: Vec<BoardConfig>,
    pub tournament: crate::publish::TournamentConfig,
    #[serde(rename = "pairing")]
    pub pairings: Vec<crate::publish::PairingConfig>,
}

/// `[http]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    pub listen: SocketAddr,
    /// Token for `/arbiter/` and the operator API; see [`Config::arbiter_token`].
    pub arbiter_token: Option<String>,
    /// HTTP connections open at once, at most (the file limit may allow fewer).
    pub max_connections: usize,
    /// A client must send a request's headers within this many ms.
    pub request_timeout_ms: u64,
    /// A connection with nothing moving either way is closed after this many ms.
    pub idle_timeout_ms: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        let limits = crate::http::server::ConnectionLimits::default();
        HttpConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            arbiter_token: None,
            max_connections: limits.max_connections,
            request_timeout_ms: limits.request_timeout.as_millis() as u64,
            idle_timeout_ms: limits.idle_timeout.as_millis() as u64,
        }
    }
}

impl HttpConfig {
    /// The HTTP server's connection limits.
    pub fn connection_limits(&self) -> crate::http::server::ConnectionLimits {
        crate::http::server::ConnectionLimits {
            max_connections: self.max_connections,
            request_timeout: std::time::Duration::from_millis(self.request_timeout_ms),
            idle_timeout: std::time::Duration::from_millis(self.idle_timeout_ms),
        }
    }
}

/// `[ebapi]`: the LiveChess-compatible local API (see [`crate::ebapi`]).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct EbapiConfig {
    pub enabled: bool,
    pub listen: SocketAddr,
    /// Browser origins allowed besides the built-in ones (lichess.org,
    /// chess.com, loopback), written as a browser sends them: `https://host`.
    pub origins: Vec<String>,
}

impl Default for EbapiConfig {
    fn default() -> Self {
        EbapiConfig {
            enabled: true,
            listen: SocketAddr::from(([127, 0, 0, 1], 1982)),
            origins: Vec::new(),
        }
    }
}

/// `[lichess]`: pushing the round's PGN to a Lichess broadcast round (see
/// [`crate::publish::lichess`]). Off while `round_id` is not set.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct LichessConfig {
    /// The broadcast round's id (8 letters and digits).
    pub round_id: Option<String>,
    /// The tournament round pushed to it; the current round at start when not set
    /// (a Lichess round is one round: the next round needs its own id).
    pub round: Option<u32>,
    /// A file holding the API token (scope `study:write`) and nothing else.
    pub token_file: Option<PathBuf>,
    /// Where Lichess is: `https://lichess.org` (a test server in the tests).
    pub url: String,
}

impl Default for LichessConfig {
    fn default() -> Self {
        LichessConfig {
            round_id: None,
            round: None,
            token_file: None,
            url: "https://lichess.org".into(),
        }
    }
}

/// `[storage]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    pub data_dir: PathBuf,
    pub recover: bool,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            data_dir: PathBuf::from("/var/lib/eboard-bridge"),
            recover: true,
        }
    }
}

/// `[discovery]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct DiscoveryConfig {
    pub enabled: bool,
    pub dir: PathBuf,
    /// The udev rules' links to boards found by USB ids (`/dev/chessboard`).
    pub links_dir: PathBuf,
    pub rescan_ms: u64,
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        DiscoveryConfig {
            enabled: true,
            dir: PathBuf::from("/dev/serial/by-id"),
            links_dir: PathBuf::from("/dev/chessboard"),
            rescan_ms: 2_000,
        }
    }
}

/// `[device]`: link supervision timings.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct DeviceConfig {
    pub probe_ms: u64,
    pub silence_timeout_ms: u64,
    pub bus_poll_ms: u64,
}

impl Default for DeviceConfig {
    fn default() -> Self {
        DeviceConfig {
            probe_ms: 2_000,
            silence_timeout_ms: 6_000,
            bus_poll_ms: 300,
        }
    }
}

/// `[leds]`: what boards with LEDs show (docs/boards.md).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct LedsConfig {
    /// On or off for every board (a `[[board]]`'s `leds` wins). Not set:
    /// off in tournament mode (a `[tournament]` name or TRF, or a
    /// `[[pairing]]`), where lights would disturb the players; on otherwise.
    pub enabled: Option<bool>,
}

impl Config {
    /// Whether boards light their LEDs unless their `[[board]]` says.
    pub fn leds_by_default(&self) -> bool {
        self.leds.enabled.unwrap_or_else(|| {
            let tournament = self.tournament.name.is_some()
                || self.tournament.trf.is_some()
                || !self.pairings.is_empty();
            !tournament
        })
    }

    /// Whether the board on `port` lights its LEDs.
    pub fn leds_for(&self, port: &Path) -> bool {
        self.boards
            .iter()
            .filter(|b| b.port == port)
            .find_map(|b| b.leds)
            .unwrap_or_else(|| self.leds_by_default())
    }
}

/// `[alerts]`: the arbiter alerts' timing.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct AlertsConfig {
    /// See [`crate::tracker::TrackerConfig::displaced_alert_ms`].
    pub displaced_alert_ms: u64,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        AlertsConfig {
            displaced_alert_ms: crate::tracker::TrackerConfig::default().displaced_alert_ms,
        }
    }
}

/// `[mqtt]`: several daemons as one venue through an MQTT broker (see
/// [`crate::mqtt`] and `docs/mqtt.md`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct MqttConfig {
    pub enabled: bool,
    /// `mqtt://host:port` or `mqtts://host:port`.
    pub broker: String,
    /// The event's name in the topics.
    pub event: String,
    /// This daemon's name in the topics; the machine's host name when `None`.
    pub host: Option<String>,
    /// Send this daemon's boards' events.
    pub publish: bool,
    /// Take every host's boards from the broker.
    pub subscribe: bool,
    pub username: Option<String>,
    /// A file holding the password and nothing else.
    pub password_file: Option<PathBuf>,
    /// PEM certificates of the CA that signed the broker's certificate (mqtts).
    pub ca_file: Option<PathBuf>,
    pub keep_alive_secs: u64,
    pub clock_tolerance_ms: u64,
}

impl Default for MqttConfig {
    fn default() -> Self {
        MqttConfig {
            enabled: false,
            broker: "mqtt://127.0.0.1:1883".into(),
            event: "event".into(),
            host: None,
            publish: true,
            subscribe: false,
            username: None,
            password_file: None,
            ca_file: None,
            keep_alive_secs: 15,
            clock_tolerance_ms: 1_000,
        }
    }
}

/// A broker's address, from `[mqtt] broker`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerAddress {
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl MqttConfig {
    /// The broker's address; `Err` says what is wrong with `broker`.
    pub fn broker_address(&self) -> Result<BrokerAddress, String> {
        let url = self.broker.trim();
        let (tls, rest) = if let Some(r) = url.strip_prefix("mqtts://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("mqtt://") {
            (false, r)
        } else {
            return Err(format!(
                "{url:?} is not a broker address; write mqtt://host:port, or mqtts://host:port for TLS"
            ));
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            match v6.split_once(']') {
                Some((h, p)) => (h, p.strip_prefix(':')),
                None => return Err(format!("{url:?}: an IPv6 address needs its closing ]")),
            }
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (rest, None),
            }
        };
        if host.is_empty() || host.contains(['/', '@', ' ']) {
            return Err(format!(
                "{url:?} has no usable host name; write e.g. mqtt://broker.hall:1883"
            ));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("{url:?}: {p:?} is not a port number (1..=65535)"))?,
            None if tls => 8883,
            None => 1883,
        };
        Ok(BrokerAddress {
            host: host.to_owned(),
            port,
            tls,
        })
    }

    /// This daemon's name in topics: `host`, else the machine's host name made
    /// topic-safe.
    pub fn host_name(&self) -> String {
        if let Some(h) = &self.host {
            return h.clone();
        }
        let raw = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let name: String = raw
            .trim()
            .chars()
            .map(|c| if topic_safe(c) { c } else { '-' })
            .take(64)
            .collect();
        if name.is_empty() {
            "eboard-bridge".into()
        } else {
            name
        }
    }
}

/// A character that may stand in a topic level we build (no wildcard, no
/// separator, nothing a broker's ACL pattern would read specially).
pub fn topic_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._-".contains(c)
}

/// How a port is spoken to: a registered board family (see
/// [`eboard_protocols::families`]) and, for families whose boards can share a
/// line, whether they do. Written `"<family>"` (`"dgt"`, `"millennium"`,
/// `"certabo"`, …) or `"<family>-bus"` (`"dgt-bus"`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Hash)]
#[serde(try_from = "String")]
pub struct Protocol {
    pub family: &'static Family,
    pub mode: PortMode,
}

impl Protocol {
    /// One DGT board on the port (the default).
    pub const DGT: Protocol = Protocol {
        family: &eboard_protocols::dgt::FAMILY,
        mode: PortMode::Single,
    };
    /// Several DGT boards on one line, in bus mode.
    pub const DGT_BUS: Protocol = Protocol {
        family: &eboard_protocols::dgt::FAMILY,
        mode: PortMode::Bus,
    };

    /// One board of `family` on its port.
    pub fn single(family: &'static Family) -> Protocol {
        Protocol {
            family,
            mode: PortMode::Single,
        }
    }

    /// The name in the configuration: `"dgt"`, `"dgt-bus"`, `"certabo"`, ….
    pub fn name(&self) -> String {
        match self.mode {
            PortMode::Single => self.family.name.to_string(),
            PortMode::Bus => format!("{}-bus", self.family.name),
        }
    }

    /// Every name the configuration accepts, for messages.
    pub fn names() -> String {
        let mut names = Vec::new();
        for f in eboard_protocols::families() {
            names.push(format!("{:?}", f.name));
            if (f.capabilities)(PortMode::Bus).bus {
                names.push(format!("\"{}-bus\"", f.name));
            }
        }
        names.join(", ")
    }

    /// Whether this is a shared line.
    pub fn is_bus(&self) -> bool {
        self.mode == PortMode::Bus
    }
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol::DGT
    }
}

impl TryFrom<String> for Protocol {
    type Error = String;

    fn try_from(name: String) -> Result<Protocol, String> {
        let (family, mode) = match name.strip_suffix("-bus") {
            Some(f) => (f, PortMode::Bus),
            None => (name.as_str(), PortMode::Single),
        };
        let family = eboard_protocols::family(family)
            .filter(|f| mode == PortMode::Single || (f.capabilities)(PortMode::Bus).bus)
            .ok_or_else(|| {
                format!(
                    "{name:?} is not a board protocol; write one of {}",
                    Protocol::names()
                )
            })?;
        Ok(Protocol { family, mode })
    }
}

/// `[[board]]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BoardConfig {
    pub port: PathBuf,
    #[serde(default)]
    pub protocol: Protocol,
    /// Same as `protocol = "dgt-bus"`.
    #[serde(default)]
    pub bus: bool,
    pub number: Option<u32>,
    /// Five-digit serial number: names the board behind a bus port.
    pub serial: Option<String>,
    /// Light the board's LEDs (boards that have them): the last verified
    /// move, and the squares of an open set-up or displaced-pieces alert.
    /// Default: `[leds] enabled`.
    pub leds: Option<bool>,
}

impl BoardConfig {
    /// The protocol, with `bus = true` meaning bus mode.
    pub fn effective_protocol(&self) -> Protocol {
        if self.bus {
            Protocol {
                mode: PortMode::Bus,
                ..self.protocol
            }
        } else {
            self.protocol
        }
    }
}

/// One port the daemon follows, after merging `[[board]]` tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortPlan {
    pub path: PathBuf,
    pub protocol: Protocol,
    /// Single mode: the board's number.
    pub number: u32,
    /// Bus mode: board number by bus address (from the configured serials).
    pub bus_numbers: BTreeMap<u16, u32>,
}

impl Config {
    /// Reads and checks `path`.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::from_toml(&text, path)
    }

    /// Parses and checks configuration text (`path` only names it in errors).
    pub fn from_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            // toml's message already says which key, where, and what was
            // expected; the line it quotes is cut, so a huge line is not
            // echoed whole into the log.
            message: shorten_lines(&e.to_string(), QUOTED_LINE_CHARS),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// The tracker settings for every board: the defaults, with the event's time
    /// control and regime (the category and penalties the Laws alerts quote).
    /// The time control was checked by [`Config::validate`]; one that does not
    /// parse is left out rather than guessed.
    pub fn tracker_config(&self) -> crate::tracker::TrackerConfig {
        crate::tracker::TrackerConfig {
            time_control: self
                .tournament
                .time_control
                .as_deref()
                .and_then(|tc| tc.parse().ok()),
            regime: self.tournament.regime,
            displaced_alert_ms: self.alerts.displaced_alert_ms,
            ..crate::tracker::TrackerConfig::default()
        }
    }

    /// Applies the `EBOARD_BRIDGE_*` variables found by `get` (normally
    /// `std::env::var`), then checks the result again.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(v) = get(ENV_HTTP_LISTEN) {
            self.http.listen = v.parse().map_err(|_| ConfigError::Env {
                var: ENV_HTTP_LISTEN,
                value: v.clone(),
                problem:
                    "not a socket address; write address:port, e.g. 127.0.0.1:8080 or [::]:8080"
                        .into(),
            })?;
        }
        if let Some(v) = get(ENV_DATA_DIR) {
            if v.is_empty() {
                return Err(ConfigError::Env {
                    var: ENV_DATA_DIR,
                    value: v,
                    problem: "empty; give a writable directory, e.g. /var/lib/eboard-bridge".into(),
                });
            }
            self.storage.data_dir = PathBuf::from(v);
        }
        if let Some(v) = get(ENV_ARBITER_TOKEN) {
            self.http.arbiter_token = Some(v);
        }
        if let Some(v) = get(ENV_EBAPI_LISTEN) {
            if v.eq_ignore_ascii_case("off") {
                self.ebapi.enabled = false;
            } else {
                self.ebapi.listen = v.parse().map_err(|_| ConfigError::Env {
                    var: ENV_EBAPI_LISTEN,
                    value: v.clone(),
                    problem: "not a socket address; write address:port, e.g. 127.0.0.1:1982, \
                              or off to switch the LiveChess-compatible API off"
                        .into(),
                })?;
                self.ebapi.enabled = true;
            }
        }
        if let Some(v) = get(ENV_DISCOVERY) {
            self.discovery.enabled = match v.as_str() {
                "true" | "1" | "yes" => true,
                "false" | "0" | "no" => false,
                _ => {
                    return Err(ConfigError::Env {
                        var: ENV_DISCOVERY,
                        value: v,
                        problem: "write true or false".into(),
                    })
                }
            };
        }
        self.validate()
    }

    /// Checks what the types cannot: numbers, serials, timings, duplicates.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: String, problem: String| Err(ConfigError::Invalid { key, problem });
        if let Some(token) = &self.http.arbiter_token {
            if token.chars().count() < MIN_TOKEN_CHARS || token.chars().any(char::is_whitespace) {
                return invalid(
                    "http.arbiter_token".into(),
                    format!(
                        "too short or has spaces; use at least {MIN_TOKEN_CHARS} characters without \
                         spaces (or leave it out and one is generated)"
                    ),
                );
            }
        }
        for origin in &self.ebapi.origins {
            let scheme_ok = origin.starts_with("https://") || origin.starts_with("http://");
            if !scheme_ok || origin.ends_with('/') || origin.contains(char::is_whitespace) {
                return invalid(
                    "ebapi.origins".into(),
                    format!(
                        "{origin:?} is not an origin; write it as a browser sends it, scheme and \
                         host (and port) with no path, e.g. \"https://broadcast.example.org\""
                    ),
                );
            }
        }
        if let Some(id) = &self.lichess.round_id {
            if id.len() != 8 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return invalid(
                    "lichess.round_id".into(),
                    format!(
                        "{id:?} is not a Lichess round id; copy the 8 letters and digits that \
                         end the round's address (/broadcast/<tournament>/<round>/<id>)"
                    ),
                );
            }
            if self.lichess.token_file.is_none() {
                return invalid(
                    "lichess.token_file".into(),
                    "missing: pushing to a round needs a token; write the path of a file \
                     holding a Lichess API token with the study:write scope"
                        .into(),
                );
            }
        }
        let url = &self.lichess.url;
        if !(url.starts_with("https://") || url.starts_with("http://")) || url.ends_with('/') {
            return invalid(
                "lichess.url".into(),
                format!("{url:?}: write the site's address without a trailing slash, e.g. \"https://lichess.org\""),
            );
        }
        if self.http.max_connections == 0 {
            return invalid(
                "http.max_connections".into(),
                "0 would refuse every client; write at least 1 (e.g. 4096)".into(),
            );
        }
        if !(500..=300_000).contains(&self.http.request_timeout_ms) {
            return invalid(
                "http.request_timeout_ms".into(),
                format!(
                    "{} is out of range; write 500..=300000 (milliseconds a client has to send \
                     a request's headers)",
                    self.http.request_timeout_ms
                ),
            );
        }
        if self.http.idle_timeout_ms < 20_000 {
            return invalid(
                "http.idle_timeout_ms".into(),
                format!(
                    "{} is too short: streams send a keep-alive every 15 s, so write at least 20000",
                    self.http.idle_timeout_ms
                ),
            );
        }
        let displaced = self.alerts.displaced_alert_ms;
        if !(1_000..=10_000).contains(&displaced) {
            return invalid(
                "alerts.displaced_alert_ms".into(),
                format!(
                    "{displaced} is out of range; write 1000..=10000 (milliseconds): shorter \
                     reports a piece knocked and put back, longer leaves the arbiter blind"
                ),
            );
        }
        self.validate_mqtt()?;
        if let Some(tc) = &self.tournament.time_control {
            if let Err(e) = tc.parse::<crate::timecontrol::TimeControl>() {
                return invalid("tournament.time_control".into(), e.to_string());
            }
        }
        if self.storage.data_dir.as_os_str().is_empty() {
            return invalid(
                "storage.data_dir".into(),
                "empty; give a writable directory, e.g. \"/var/lib/eboard-bridge\"".into(),
            );
        }
        for (key, v, min) in [
            ("discovery.rescan_ms", self.discovery.rescan_ms, 100),
            ("device.probe_ms", self.device.probe_ms, 100),
            (
                "device.silence_timeout_ms",
                self.device.silence_timeout_ms,
                500,
            ),
            ("device.bus_poll_ms", self.device.bus_poll_ms, 50),
        ] {
            if v < min {
                return invalid(
                    key.into(),
                    format!("{v} is too small; write at least {min}"),
                );
            }
        }
        if self.device.silence_timeout_ms <= self.device.probe_ms {
            return invalid(
                "device.silence_timeout_ms".into(),
                format!(
                    "must be longer than device.probe_ms ({}), or a quiet but healthy board \
                     is declared offline between two probes; write e.g. {}",
                    self.device.probe_ms,
                    self.device.probe_ms * 3
                ),
            );
        }
        let mut numbers = BTreeSet::new();
        let mut single_ports = BTreeSet::new();
        let mut protocols: BTreeMap<&Path, Protocol> = BTreeMap::new();
        for (i, b) in self.boards.iter().enumerate() {
            let key = |field: &str| format!("board[{}].{field}", i + 1);
            if b.port.as_os_str().is_empty() {
                return invalid(key("port"), "empty; write the board's port, e.g. \"/dev/ttyACM0\" or a /dev/serial/by-id/ path".into());
            }
            if b.bus && !(b.protocol.family.capabilities)(PortMode::Bus).bus {
                return invalid(
                    key("bus"),
                    format!(
                        "{} boards cannot share a line; remove `bus = true`",
                        b.protocol.family.title
                    ),
                );
            }
            let protocol = b.effective_protocol();
            if let Some(&p) = protocols.get(b.port.as_path()) {
                if p != protocol {
                    return invalid(key("protocol"), format!("{} is used with two protocols; every [[board]] on one port must say the same", b.port.display()));
                }
            }
            protocols.insert(&b.port, protocol);
            if let Some(n) = b.number {
                if n == 0 {
                    return invalid(key("number"), "board numbers start at 1".into());
                }
                if !numbers.insert(n) {
                    return invalid(
                        key("number"),
                        format!("board number {n} is given twice; each board needs its own"),
                    );
                }
            }
            if let Some(s) = &b.serial {
                if parse_serial(s).is_none() {
                    return invalid(key("serial"), format!("{s:?} is not a DGT serial number; write its five digits as a string, e.g. \"01025\""));
                }
            }
            match protocol.mode {
                PortMode::Single => {
                    if !single_ports.insert(&b.port) {
                        return invalid(key("port"), format!("{} is listed twice with protocol {:?}; one board per port, or use protocol = \"dgt-bus\" with a serial per board", b.port.display(), protocol.name()));
                    }
                }
                PortMode::Bus => {
                    if b.serial.is_none() && b.number.is_some() {
                        return invalid(key("serial"), "a numbered board behind a bus port needs its serial number, e.g. serial = \"01025\", to tell it from the others".into());
                    }
                }
            }
        }
        Ok(())
    }

    /// `[mqtt]`: the broker's address, the names used in topics, and the
    /// settings that only make sense together.
    fn validate_mqtt(&self) -> Result<(), ConfigError> {
        let m = &self.mqtt;
        let invalid = |key: &str, problem: String| {
            Err(ConfigError::Invalid {
                key: format!("mqtt.{key}"),
                problem,
            })
        };
        if let Err(problem) = m.broker_address() {
            return invalid("broker", problem);
        }
        let name_ok = |n: &str| !n.is_empty() && n.len() <= 64 && n.chars().all(topic_safe);
        if !name_ok(&m.event) {
            return invalid(
                "event",
                format!(
                    "{:?} cannot name a topic level; use 1 to 64 letters, digits, '.', '_' or '-', e.g. \"olympiad-2026\"",
                    m.event
                ),
            );
        }
        if let Some(h) = &m.host {
            if !name_ok(h) {
                return invalid(
                    "host",
                    format!(
                        "{h:?} cannot name a topic level; use 1 to 64 letters, digits, '.', '_' or '-', e.g. \"hall-a\""
                    ),
                );
            }
        }
        if m.enabled && !m.publish && !m.subscribe {
            return invalid(
                "publish",
                "with subscribe = false too the daemon would do nothing with the broker; set publish = true (a hall's host), subscribe = true (the aggregator) or both"
                    .into(),
            );
        }
        if m.password_file.is_some() && m.username.is_none() {
            return invalid(
                "username",
                "missing: a password_file is given, and MQTT sends a password only with a user name; write the broker user's name"
                    .into(),
            );
        }
        if m.ca_file.is_some() && !m.broker.trim().starts_with("mqtts://") {
            return invalid(
                "ca_file",
                "is for TLS, but broker is not an mqtts:// address; write mqtts://host:8883 or remove ca_file"
                    .into(),
            );
        }
        if !(5..=600).contains(&m.keep_alive_secs) {
            return invalid(
                "keep_alive_secs",
                format!("{} is out of range; write 5..=600", m.keep_alive_secs),
            );
        }
        if !(10..=600_000).contains(&m.clock_tolerance_ms) {
            return invalid(
                "clock_tolerance_ms",
                format!(
                    "{} is out of range; write 10..=600000 (milliseconds)",
                    m.clock_tolerance_ms
                ),
            );
        }
        Ok(())
    }

    /// The ports given in `[[board]]` tables, boards on one port merged. Single
    /// boards without a number get the lowest free numbers, in file order.
    pub fn port_plans(&self) -> Vec<PortPlan> {
        let mut used: BTreeSet<u32> = self.boards.iter().filter_map(|b| b.number).collect();
        let mut plans: Vec<PortPlan> = Vec::new();
        for b in &self.boards {
            let protocol = b.effective_protocol();
            let number = b.number.unwrap_or_else(|| next_free(&mut used));
            if let Some(plan) = plans.iter_mut().find(|p| p.path == b.port) {
                if let Some(addr) = b.serial.as_deref().and_then(parse_serial) {
                    plan.bus_numbers.insert(addr, number);
                }
                continue;
            }
            let mut bus_numbers = BTreeMap::new();
            if protocol.is_bus() {
                if let Some(addr) = b.serial.as_deref().and_then(parse_serial) {
                    bus_numbers.insert(addr, number);
                }
            }
            plans.push(PortPlan {
                path: b.port.clone(),
                protocol,
                number,
                bus_numbers,
            });
        }
        plans
    }
}

/// How much of a configuration line an error message quotes.
const QUOTED_LINE_CHARS: usize = 160;

/// `text` with every line longer than `max` characters cut there (marked `…`).
fn shorten_lines(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(4096));
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if body.chars().count() > max {
            out.extend(body.chars().take(max));
            out.push_str("… (line cut)");
            if line.ends_with('\n') {
                out.push('\n');
            }
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The lowest board number not yet used, marked used.
pub fn next_free(used: &mut BTreeSet<u32>) -> u32 {
    let mut n = 1;
    while used.contains(&n) {
        n += 1;
    }
    used.insert(n);
    n
}

/// A DGT serial number as a bus address: the number, 14 bits (dgt.md §1.4).
pub fn parse_serial(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = s.parse().ok()?;
    Some((n & 0x3fff) as u16)
}

pub use eboard_protocols::dgt::looks_like_dgt;

/// A port discovery found, and what to do with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    /// The families it may be: one, to follow at once; several (or one on
    /// USB ids other devices share), to listen to first (see
    /// [`eboard_protocols::family::Family::recognise`]).
    pub families: Vec<&'static Family>,
    /// Listen before following: found by shared USB ids.
    pub probe: bool,
}

/// The boards under `dir` (`/dev/serial/by-id/`, by their USB names) and
/// `links_dir` (`/dev/chessboard/`, the udev rules' links: `<family>-…` by
/// family, `usb-<vendor>-<product>-…` by USB ids), sorted. A missing
/// directory (nothing plugged at all) is an empty list, not an error.
pub fn discover(dir: &Path, links_dir: &Path) -> Vec<Found> {
    discover_in(dir, links_dir, Path::new("/sys"))
}

/// [`discover`], reading the HID report descriptors under `sys` (`/sys`;
/// `eboard-bridge doctor` is pointed at a directory of its own in tests).
pub fn discover_in(dir: &Path, links_dir: &Path, sys: &Path) -> Vec<Found> {
    let names = |d: &Path| -> Vec<(String, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(d) else {
            return Vec::new();
        };
        let mut v: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect();
        v.sort();
        v
    };
    let mut found = Vec::new();
    for (name, path) in names(dir) {
        if let Some(f) = eboard_protocols::families()
            .iter()
            .find(|f| (f.by_id_name)(&name))
        {
            found.push(Found {
                path,
                families: vec![*f],
                probe: false,
            });
        }
    }
    for (name, path) in names(links_dir) {
        if let Some((vendor, product)) = usb_ids_in_link(&name) {
            let matches: Vec<(&'static Family, bool)> = eboard_protocols::families()
                .iter()
                .filter_map(|f| f.matches_usb(vendor, product).map(|m| (*f, m.shared)))
                .collect();
            if matches.is_empty() {
                continue;
            }
            if !matches
                .iter()
                .any(|(f, _)| right_hid_interface(f, &path, sys))
            {
                continue;
            }
            let probe = matches.len() > 1 || matches.iter().any(|(_, shared)| *shared);
            found.push(Found {
                path,
                families: matches.into_iter().map(|(f, _)| f).collect(),
                probe,
            });
        } else if let Some(f) = eboard_protocols::families().iter().find(|f| {
            name.strip_prefix(f.name)
                .is_some_and(|r| r.starts_with('-'))
        }) {
            found.push(Found {
                path,
                families: vec![*f],
                probe: false,
            });
        }
    }
    found
}

/// Whether `path` is the HID interface `family` reads: for a family read
/// through hidraw on a given usage page, the node's report descriptor (under
/// `sys`) must declare that page (a Chessnut has a second interface that
/// sends no positions). Anything that is not a hidraw node, or whose
/// descriptor cannot be read, is taken.
pub fn right_hid_interface(family: &Family, path: &Path, sys: &Path) -> bool {
    let node = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let Some(name) = node.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return true;
    };
    hid_interface_is_read(family, &name, sys)
}

/// [`right_hid_interface`] for the node called `name` (`hidraw3`) under `sys`.
pub fn hid_interface_is_read(family: &Family, name: &str, sys: &Path) -> bool {
    let transport = (family.driver)(&eboard_protocols::family::DriverSetup::default()).transport();
    let eboard_protocols::family::Transport::Hidraw {
        usage_page: Some(page),
    } = transport
    else {
        return true;
    };
    if !name.starts_with("hidraw") {
        return true;
    }
    let descriptor = sys
        .join("class/hidraw")
        .join(name)
        .join("device/report_descriptor");
    let Ok(bytes) = std::fs::read(descriptor) else {
        return true;
    };
    // A Usage Page item with a two-byte page: 0x06, low byte, high byte.
    let [lo, hi] = page.to_le_bytes();
    bytes.windows(3).any(|w| w == [0x06, lo, hi])
}

/// The USB ids in a link name the udev rules make for boards found by ids:
/// `usb-10c4-ea60-ttyUSB0` is vendor 0x10c4, product 0xea60.
pub fn usb_ids_in_link(name: &str) -> Option<(u16, u16)> {
    let rest = name.strip_prefix("usb-")?;
    let mut parts = rest.splitn(3, '-');
    let vendor = u16::from_str_radix(parts.next()?, 16).ok()?;
    let product = u16::from_str_radix(parts.next()?, 16).ok()?;
    parts.next()?;
    Some((vendor, product))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml(text, Path::new("test.toml"))
    }

    #[test]
    fn ebapi_and_lichess_keys_are_checked() {
        let c = parse("[ebapi]\nlisten = \"0.0.0.0:1982\"\norigins = [\"https://club.example\"]\n")
            .unwrap();
        assert!(c.ebapi.enabled);
        assert_eq!(c.ebapi.listen.port(), 1982);
        let e = parse("[ebapi]\norigins = [\"club.example/\"]\n").unwrap_err();
        assert!(e.to_string().contains("ebapi.origins"), "{e}");
        let e = parse("[lichess]\nround_id = \"abc\"\ntoken_file = \"/t\"\n").unwrap_err();
        assert!(e.to_string().contains("8 letters and digits"), "{e}");
        let e = parse("[lichess]\nround_id = \"AbCd1234\"\n").unwrap_err();
        assert!(e.to_string().contains("lichess.token_file"), "{e}");
        let e = parse("[lichess]\nurl = \"https://lichess.org/\"\n").unwrap_err();
        assert!(e.to_string().contains("trailing slash"), "{e}");
        let mut c = Config::default();
        c.apply_env(|k| (k == ENV_EBAPI_LISTEN).then(|| "off".into()))
            .unwrap();
        assert!(!c.ebapi.enabled);
        c.apply_env(|k| (k == ENV_EBAPI_LISTEN).then(|| "127.0.0.9:1982".into()))
            .unwrap();
        assert!(c.ebapi.enabled && c.ebapi.listen.to_string() == "127.0.0.9:1982");
        let e = c
            .apply_env(|k| (k == ENV_EBAPI_LISTEN).then(|| "port 1982".into()))
            .unwrap_err();
        assert!(e.to_string().contains("or off"), "{e}");
    }

    #[test]
    fn mqtt_keys_are_checked() {
        let c = parse(
            "[mqtt]\nenabled = true\nbroker = \"mqtts://broker.hall\"\nhost = \"hall-a\"\n\
             event = \"olympiad-2026\"\nsubscribe = true\nusername = \"hall-a\"\n\
             password_file = \"/etc/p\"\nca_file = \"/etc/ca.pem\"\n",
        )
        .unwrap();
        let a = c.mqtt.broker_address().unwrap();
        assert_eq!(
            (a.host.as_str(), a.port, a.tls),
            ("broker.hall", 8883, true)
        );
        assert_eq!(c.mqtt.host_name(), "hall-a");
        let a = MqttConfig {
            broker: "mqtt://[::1]:1884".into(),
            ..MqttConfig::default()
        }
        .broker_address()
        .unwrap();
        assert_eq!((a.host.as_str(), a.port, a.tls), ("::1", 1884, false));
        for (text, key) in [
            ("broker = \"tcp://x:1883\"", "mqtt.broker"),
            ("broker = \"mqtt://x:0\"", "mqtt.broker"),
            ("event = \"a/b\"", "mqtt.event"),
            ("host = \"hall+\"", "mqtt.host"),
            ("enabled = true\npublish = false", "mqtt.publish"),
            ("password_file = \"/p\"", "mqtt.username"),
            ("ca_file = \"/ca.pem\"", "mqtt.ca_file"),
            ("keep_alive_secs = 1", "mqtt.keep_alive_secs"),
            ("clock_tolerance_ms = 0", "mqtt.clock_tolerance_ms"),
        ] {
            let e = parse(&format!("[mqtt]\n{text}\n")).unwrap_err();
            assert!(e.to_string().contains(key), "{text}: {e}");
        }
        assert!(!Config::default().mqtt.enabled, "off by default");
        assert!(!MqttConfig::default().host_name().is_empty());
    }

    #[test]
    fn printed_defaults_parse_back_to_the_defaults() {
        assert_eq!(parse(DEFAULT_CONFIG_TOML).unwrap(), Config::default());
    }

    #[test]
    fn time_control_and_regime_reach_the_tracker_config() {
        use crate::timecontrol::{Category, Regime};
        let c =
            parse("[tournament]\ntime_control = \"180+2\"\nregime = \"unsupervised\"\n").unwrap();
        let t = c.tracker_config();
        assert_eq!(t.regime, Regime::Unsupervised);
        let tc = t.time_control.expect("time control configured");
        assert_eq!(tc.category(), Some(Category::Blitz));
        // Nothing configured: standard rules, no time control.
        let t = Config::default().tracker_config();
        assert_eq!((t.regime, t.time_control), (Regime::Supervised, None));
        assert_eq!(t.displaced_alert_ms, 6_000);
        let c = parse("[alerts]\ndisplaced_alert_ms = 7000\n").unwrap();
        assert_eq!(c.tracker_config().displaced_alert_ms, 7_000);
        let e = parse("[alerts]\ndisplaced_alert_ms = 30000\n").unwrap_err();
        assert!(e.to_string().contains("alerts.displaced_alert_ms"), "{e}");
    }

    #[test]
    fn a_bad_time_control_or_regime_is_refused_at_load() {
        let e = parse("[tournament]\ntime_control = \"ninety minutes\"\n").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("tournament.time_control"), "{msg}");
        assert!(msg.contains("40/5400+30:1800+30"), "{msg}");
        let e = parse("[tournament]\nregime = \"strict\"\n").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("regime"), "{msg}");
        assert!(
            msg.contains("supervised") && msg.contains("unsupervised"),
            "{msg}"
        );
    }

    #[test]
    fn the_contract_example_parses() {
        let c = parse(
            "[http]\nlisten = \"0.0.0.0:9000\"\n[storage]\ndata_dir = \"/srv/eb\"\n\
             [[board]]\nport = \"/dev/ttyACM0\"\nprotocol = \"dgt\"\nnumber = 7\n",
        )
        .unwrap();
        assert_eq!(c.http.listen.port(), 9000);
        assert_eq!(c.storage.data_dir, PathBuf::from("/srv/eb"));
        let plans = c.port_plans();
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].number, 7);
        assert_eq!(plans[0].protocol, Protocol::DGT);
    }

    #[test]
    fn a_huge_line_is_not_echoed_whole() {
        // 100 000 nested arrays on one line: deep enough for toml to give up,
        // far too long to quote in a log.
        let text = format!("[http]\nlisten = {}", "[".repeat(100_000));
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.len() < 2_000, "{} bytes: {}", e.len(), &e[..300]);
        assert!(e.contains("test.toml") && e.contains("print-config"), "{e}");
    }

    #[test]
    fn unknown_keys_are_named() {
        let e = parse("[storage]\ndatadir = \"/x\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("datadir"), "{e}");
        assert!(e.contains("data_dir"), "the valid keys are listed: {e}");
        let e = parse("[[board]]\nport = \"/dev/x\"\nnumbr = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("numbr"), "{e}");
    }

    #[test]
    fn bad_values_say_what_to_write() {
        let e = parse("[http]\nlisten = \"localhost\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("listen"), "{e}");
        let e = parse("[[board]]\nport = \"/dev/x\"\nprotocol = \"usb\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("dgt-bus"), "{e}");
        let e = parse("[[board]]\nport = \"/dev/x\"\nnumber = 0\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("board[1].number") && e.contains("start at 1"),
            "{e}"
        );
        let e = parse(
            "[[board]]\nport = \"/dev/x\"\nnumber = 2\n[[board]]\nport = \"/dev/y\"\nnumber = 2\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("board[2].number") && e.contains("twice"), "{e}");
        let e = parse("[[board]]\nport = \"/dev/x\"\nbus = true\nserial = \"12a\"\nnumber = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("board[1].serial") && e.contains("01025"), "{e}");
        let e = parse("[device]\nprobe_ms = 5000\nsilence_timeout_ms = 4000\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("device.silence_timeout_ms"), "{e}");
    }

    #[test]
    fn environment_overrides_win_and_bad_values_are_named() {
        let mut c = Config::default();
        c.apply_env(|k| match k {
            ENV_HTTP_LISTEN => Some("0.0.0.0:81".into()),
            ENV_DATA_DIR => Some("/tmp/eb".into()),
            ENV_DISCOVERY => Some("false".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.http.listen.port(), 81);
        assert_eq!(c.storage.data_dir, PathBuf::from("/tmp/eb"));
        assert!(!c.discovery.enabled);
        let e = Config::default()
            .apply_env(|k| (k == ENV_HTTP_LISTEN).then(|| "nowhere".to_string()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(ENV_HTTP_LISTEN) && e.contains("127.0.0.1:8080"),
            "{e}"
        );
    }

    #[test]
    fn bus_boards_are_numbered_by_serial_and_singles_fill_gaps() {
        let c = parse(
            "[[board]]\nport = \"/dev/bus\"\nprotocol = \"dgt-bus\"\nserial = \"01025\"\nnumber = 3\n\
             [[board]]\nport = \"/dev/bus\"\nbus = true\nserial = \"01026\"\nnumber = 4\n\
             [[board]]\nport = \"/dev/single\"\n",
        )
        .unwrap();
        let plans = c.port_plans();
        assert_eq!(plans.len(), 2);
        assert_eq!(plans[0].protocol, Protocol::DGT_BUS);
        assert_eq!(
            plans[0].bus_numbers,
            BTreeMap::from([(1025u16, 3u32), (1026, 4)])
        );
        assert_eq!(plans[1].number, 1, "the lowest free number");
    }

    #[test]
    fn discovery_finds_boards_by_name_by_family_link_and_by_usb_ids() {
        let dir = tempfile::tempdir().unwrap();
        let by_id = dir.path().join("by-id");
        let links = dir.path().join("chessboard");
        std::fs::create_dir_all(&by_id).unwrap();
        std::fs::create_dir_all(&links).unwrap();
        let target = dir.path().join("node");
        std::fs::write(&target, "").unwrap();
        for (d, name) in [
            (&by_id, "usb-Digital_Game_Technology_DGT_Board_01025-if00"),
            (&by_id, "usb-Silicon_Labs_CP2102_0001-if00-port0"),
            (&links, "dgt-01026"),
            (&links, "usb-10c4-ea60-ttyUSB1"),
            (&links, "usb-2d80-8001-hidraw3"),
            (&links, "usb-1234-5678-ttyUSB2"),
        ] {
            std::os::unix::fs::symlink(&target, d.join(name)).unwrap();
        }
        let found = discover(&by_id, &links);
        let seen: Vec<(String, Vec<&str>, bool)> = found
            .iter()
            .map(|f| {
                (
                    f.path.file_name().unwrap().to_string_lossy().into_owned(),
                    f.families.iter().map(|f| f.name).collect(),
                    f.probe,
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    "usb-Digital_Game_Technology_DGT_Board_01025-if00".into(),
                    vec!["dgt"],
                    false
                ),
                ("dgt-01026".into(), vec!["dgt"], false),
                (
                    "usb-10c4-ea60-ttyUSB1".into(),
                    vec!["certabo", "occupancy"],
                    true
                ),
                ("usb-2d80-8001-hidraw3".into(), vec!["chessnut"], false),
            ]
        );
    }

    #[test]
    fn only_the_vendor_hid_interface_of_a_chessnut_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let chessnut = eboard_protocols::family("chessnut").unwrap();
        for (name, descriptor) in [
            ("hidraw3", vec![0x06, 0x00, 0xff, 0x09, 0x01]),
            ("hidraw4", vec![0x05, 0x01, 0x09, 0x06]),
        ] {
            let dev = dir.path().join("class/hidraw").join(name).join("device");
            std::fs::create_dir_all(&dev).unwrap();
            std::fs::write(dev.join("report_descriptor"), descriptor).unwrap();
        }
        let node = |n: &str| PathBuf::from("/dev").join(n);
        assert!(right_hid_interface(chessnut, &node("hidraw3"), dir.path()));
        assert!(!right_hid_interface(chessnut, &node("hidraw4"), dir.path()));
        // No descriptor to read (a stand-in, another kernel): taken.
        assert!(right_hid_interface(chessnut, &node("hidraw9"), dir.path()));
        assert!(right_hid_interface(chessnut, &node("ttyUSB0"), dir.path()));
    }

    #[test]
    fn protocols_are_registered_family_names() {
        let c = parse("[[board]]\nport = \"/dev/x\"\nprotocol = \"certabo\"\n").unwrap();
        assert_eq!(c.port_plans()[0].protocol.family.name, "certabo");
        let e = parse("[[board]]\nport = \"/dev/x\"\nprotocol = \"certabo-bus\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"chessnut\""), "the names are listed: {e}");
        let e = parse("[[board]]\nport = \"/dev/x\"\nprotocol = \"chessnut\"\nbus = true\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("board[1].bus"), "{e}");
    }

    #[test]
    fn leds_are_off_in_tournament_mode_unless_a_board_says() {
        assert!(Config::default().leds_by_default());
        let c = parse(
            "[tournament]\nname = \"Open\"\n[[board]]\nport = \"/dev/a\"\n\
             [[board]]\nport = \"/dev/b\"\nleds = true\n",
        )
        .unwrap();
        assert!(!c.leds_for(Path::new("/dev/a")));
        assert!(c.leds_for(Path::new("/dev/b")));
        let c = parse("[leds]\nenabled = false\n").unwrap();
        assert!(!c.leds_by_default());
    }

    #[test]
    fn dgt_names_are_recognised_and_generic_bridges_are_not() {
        assert!(looks_like_dgt(
            "usb-Digital_Game_Technology_DGT_Board_01025-if00"
        ));
        assert!(looks_like_dgt("usb-DGT_e-Board-if00"));
        assert!(!looks_like_dgt(
            "usb-FTDI_FT232R_USB_UART_A50285BI-if00-port0"
        ));
        assert!(!looks_like_dgt("usb-Silicon_Labs_CP2102_0001-if00-port0"));
        assert!(!looks_like_dgt("usb-DGTX_thing"));
    }
}
