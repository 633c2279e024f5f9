//! Several daemons as one venue, through an MQTT broker (`docs/mqtt.md`).
//!
//! A hall's daemon *publishes*: every event its journal logs goes to the
//! broker at QoS 1 with its identity `(host, board, stream, seq)`, read back
//! from the journal ([`publisher`]), so what the broker has not acknowledged
//! is sent again after an outage or a `kill -9`. The venue's aggregator
//! *subscribes* ([`aggregator`]): it applies each host's events to its own hub
//! once and in order per board, asks the hosts for what it missed, and so
//! serves every board of the venue on one set of feeds and one dashboard.
//!
//! Article 12.6 holds by topic tree: public game events go under
//! `eboard/<event>/…`, alerts under `eboard-arbiter/<event>/…`, which a
//! broker's ACL keeps to the aggregator. The two trees carry different types
//! ([`PublicMessage`] holds a [`GameEvent`], [`ArbiterMessage`] an alert), so
//! an alert cannot be put on a public topic.

pub mod aggregator;
pub mod publisher;

use std::sync::Arc;
use std::time::Duration;

use rumqttc::{LastWill, MqttOptions, QoS, TlsConfiguration, Transport};
use serde::{Deserialize, Serialize};

use crate::daemon::config::{Config, MqttConfig};
pub use crate::daemon::journal::LogStream;
use crate::events::{Alert, AlertResolved, GameEvent};

/// Where each kind of message goes, for one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topics {
    /// `eboard/<event>`
    public: String,
    /// `eboard-arbiter/<event>`
    arbiter: String,
}

impl Topics {
    pub fn new(event: &str) -> Topics {
        Topics {
            public: format!("eboard/{event}"),
            arbiter: format!("eboard-arbiter/{event}"),
        }
    }

    /// A host's liveness, retained; its Last Will says `offline`.
    pub fn host_status(&self, host: &str) -> String {
        format!("{}/hosts/{host}/status", self.public)
    }

    /// Every host's status.
    pub fn all_host_status(&self) -> String {
        format!("{}/hosts/+/status", self.public)
    }

    /// A board's events of `stream`.
    pub fn events(&self, stream: LogStream, board: u32) -> String {
        match stream {
            LogStream::Public => format!("{}/boards/{board}/events", self.public),
            LogStream::Arbiter => format!("{}/boards/{board}/events", self.arbiter),
        }
    }

    /// A board's state of `stream`, retained.
    pub fn state(&self, stream: LogStream, board: u32) -> String {
        match stream {
            LogStream::Public => format!("{}/boards/{board}/state", self.public),
            LogStream::Arbiter => format!("{}/boards/{board}/state", self.arbiter),
        }
    }

    /// Every board's events and states of `stream`.
    pub fn all_boards(&self, stream: LogStream) -> String {
        match stream {
            LogStream::Public => format!("{}/boards/#", self.public),
            LogStream::Arbiter => format!("{}/boards/#", self.arbiter),
        }
    }

    /// Requests to `host` to send a range of its events again.
    pub fn replay(&self, host: &str) -> String {
        format!("{}/replay/{host}", self.arbiter)
    }

    /// The board number and the last level (`events`, `state`) of a board topic.
    pub fn parse_board_topic<'a>(&self, topic: &'a str) -> Option<(LogStream, u32, &'a str)> {
        let (stream, rest) = if let Some(r) = topic.strip_prefix(&self.public) {
            (LogStream::Public, r)
        } else if let Some(r) = topic.strip_prefix(&self.arbiter) {
            (LogStream::Arbiter, r)
        } else {
            return None;
        };
        let rest = rest.strip_prefix("/boards/")?;
        let (board, kind) = rest.split_once('/')?;
        Some((stream, board.parse().ok()?, kind))
    }
}

/// A public game event as it travels: its identity, where it belongs, and
/// the event itself, exactly as its host logged it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicMessage {
    pub host: String,
    pub board: u32,
    /// The event's number among the board's public events (1, 2, 3…).
    pub seq: u64,
    /// The round of the game the event belongs to.
    pub round: u32,
    pub ply: u32,
    /// The host's session time of the event (ms; see `docs/journal.md`).
    pub t_ms: u64,
    /// The host's wall clock when it logged the event (Unix ms).
    pub unix_ms: u64,
    pub event: GameEvent,
}

/// An arbiter-only event as it travels (never on a public topic).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArbiterMessage {
    pub host: String,
    pub board: u32,
    /// The event's number among the board's arbiter events (1, 2, 3…).
    pub seq: u64,
    pub ply: u32,
    pub t_ms: u64,
    pub unix_ms: u64,
    pub event: ArbiterEventBody,
}

/// What an [`ArbiterMessage`] says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ArbiterEventBody {
    Alert(Alert),
    AlertResolved(AlertResolved),
}

/// A board's state on a host, retained per board and stream: how far its
/// events go (a late or lagging aggregator asks for the rest), and on the
/// public tree where and whether the board is followed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardState {
    pub host: String,
    pub board: u32,
    /// The last event number logged in this stream (0: none yet).
    pub seq: u64,
    /// Public state only: the board's port on its host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// Public state only: the board answers its host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online: Option<bool>,
    pub unix_ms: u64,
}

/// A host's liveness (retained; the broker sends the Last Will, `offline`,
/// when the host vanishes without saying goodbye).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostStatus {
    pub host: String,
    /// `online` or `offline`.
    pub state: String,
    /// The host's wall clock when it sent this (Unix ms); absent in the Last Will.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_ms: Option<u64>,
    /// The boards the host follows.
    #[serde(default)]
    pub boards: Vec<u32>,
}

/// An aggregator asking a host for `from..=to` of a board's events again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayRequest {
    pub board: u32,
    pub stream: LogStreamName,
    pub from: u64,
    pub to: u64,
}

/// [`LogStream`] on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogStreamName {
    Public,
    Arbiter,
}

impl From<LogStream> for LogStreamName {
    fn from(s: LogStream) -> LogStreamName {
        match s {
            LogStream::Public => LogStreamName::Public,
            LogStream::Arbiter => LogStreamName::Arbiter,
        }
    }
}

impl From<LogStreamName> for LogStream {
    fn from(s: LogStreamName) -> LogStream {
        match s {
            LogStreamName::Public => LogStream::Public,
            LogStreamName::Arbiter => LogStream::Arbiter,
        }
    }
}

/// Why the MQTT side cannot start.
#[derive(Debug, thiserror::Error)]
pub enum MqttError {
    #[error("[mqtt] broker: {0}")]
    Broker(String),
    #[error("cannot read mqtt.password_file {path}: {source}. Write the broker password alone in that file, readable by the daemon's user")]
    Password {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("mqtt.password_file {0} is empty; write the broker password in it")]
    EmptyPassword(std::path::PathBuf),
    #[error("cannot read mqtt.ca_file {path}: {problem}. Give the PEM certificate(s) of the CA that signed the broker's certificate")]
    Ca {
        path: std::path::PathBuf,
        problem: String,
    },
}

/// The connection settings common to both roles. `client_id` must be unique
/// on the broker; `will`, when given, is the retained Last Will.
pub fn connect_options(
    m: &MqttConfig,
    client_id: &str,
    will: Option<(String, Vec<u8>)>,
) -> Result<MqttOptions, MqttError> {
    let addr = m.broker_address().map_err(MqttError::Broker)?;
    let mut opts = MqttOptions::new(client_id, addr.host.clone(), addr.port);
    opts.set_keep_alive(Duration::from_secs(m.keep_alive_secs));
    // Every session starts clean: what the broker had not acknowledged is
    // sent again from the journal, and a subscriber asks for what it missed.
    opts.set_clean_session(true);
    opts.set_max_packet_size(1 << 20, 1 << 20);
    if let Some(user) = &m.username {
        let password = match &m.password_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| MqttError::Password {
                    path: path.clone(),
                    source,
                })?;
                let p = text.trim_end_matches(['\r', '\n']).to_owned();
                if p.is_empty() {
                    return Err(MqttError::EmptyPassword(path.clone()));
                }
                p
            }
            None => String::new(),
        };
        opts.set_credentials(user.clone(), password);
    }
    if let Some((topic, payload)) = will {
        opts.set_last_will(LastWill::new(topic, payload, QoS::AtLeastOnce, true));
    }
    if addr.tls {
        opts.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(
            Arc::new(tls_config(m)?),
        )));
    }
    Ok(opts)
}

/// TLS with rustls (ring): the CA of `ca_file`, else the public roots.
fn tls_config(m: &MqttConfig) -> Result<rustls::ClientConfig, MqttError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    match &m.ca_file {
        Some(path) => {
            let ca_err = |problem: String| MqttError::Ca {
                path: path.clone(),
                problem,
            };
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| ca_err(e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| ca_err(e.to_string()))?;
            if certs.is_empty() {
                return Err(ca_err("it holds no certificate".into()));
            }
            for c in certs {
                roots.add(c).map_err(|e| ca_err(e.to_string()))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| MqttError::Broker(format!("TLS cannot be set up: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// One session with the broker: the client to send through and the events of
/// its event loop, which runs on a task of its own (polling it from a
/// `select!` could cut a write in half). The session ends at its first
/// error; the caller then starts a new one, so nothing of an old session is
/// ever sent again behind the caller's back.
pub(crate) struct Session {
    pub client: rumqttc::AsyncClient,
    pub events: tokio::sync::mpsc::Receiver<Result<rumqttc::Event, rumqttc::ConnectionError>>,
    task: tokio::task::JoinHandle<()>,
}

/// Requests the client may queue before the event loop takes them.
pub(crate) const CLIENT_QUEUE: usize = 512;

impl Session {
    pub fn start(opts: MqttOptions) -> Session {
        let (client, mut eventloop) = rumqttc::AsyncClient::new(opts, CLIENT_QUEUE);
        let (tx, events) = tokio::sync::mpsc::channel(1024);
        let task = tokio::spawn(async move {
            loop {
                let r = eventloop.poll().await;
                let failed = r.is_err();
                if tx.send(r).await.is_err() || failed {
                    break;
                }
            }
        });
        Session {
            client,
            events,
            task,
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Says what a failed session means and what to do about it.
fn describe_connection_error(e: &rumqttc::ConnectionError, broker: &str) -> String {
    use rumqttc::{ConnectReturnCode, ConnectionError};
    match e {
        ConnectionError::ConnectionRefused(
            ConnectReturnCode::BadUserNamePassword | ConnectReturnCode::NotAuthorized,
        ) => format!(
            "the MQTT broker {broker} refused the user name or password; check [mqtt] username \
             and password_file against the broker's password file"
        ),
        ConnectionError::ConnectionRefused(code) => format!(
            "the MQTT broker {broker} refused the connection ({code:?}); check the broker's log"
        ),
        ConnectionError::Tls(t) => format!(
            "TLS with the MQTT broker {broker} failed ({t}); check [mqtt] ca_file and that the \
             broker's certificate names the host in [mqtt] broker"
        ),
        other => format!(
            "no connection to the MQTT broker {broker} ({other}); retrying. Check that the \
             broker runs and that [mqtt] broker names it"
        ),
    }
}

/// The wait before the next attempt after `failures` sessions in a row failed.
fn backoff(failures: u32) -> Duration {
    Duration::from_millis((250u64 << failures.min(4)).min(2_000))
}

/// How one role's sessions with the broker went: the log says once what went
/// wrong and once when the broker is back, and each failure in a row waits
/// longer before the next try.
pub(crate) struct Reconnects {
    broker: String,
    failures: u32,
    /// What the log said about the last failure (empty: none since the last session).
    last_error: String,
}

impl Reconnects {
    pub fn new(broker: &str) -> Reconnects {
        Reconnects {
            broker: broker.to_owned(),
            failures: 0,
            last_error: String::new(),
        }
    }

    /// The broker accepted a session: logs `first` for the first one, or that
    /// it is back and then `again` (what this role does about it).
    pub fn accepted(&mut self, first: impl FnOnce() -> String, again: &str) {
        self.failures = 0;
        if self.last_error.is_empty() {
            tracing::info!("{}", first());
        } else {
            tracing::info!("MQTT broker {} reached again; {again}", self.broker);
            self.last_error.clear();
        }
    }

    /// A session ended with `last` (its last event, an error or nothing):
    /// logs why, with `meanwhile` (what it means for this role), unless the
    /// log said so already; returns how long to wait before the next try.
    pub fn ended(
        &mut self,
        last: Option<Result<rumqttc::Event, rumqttc::ConnectionError>>,
        meanwhile: &str,
    ) -> Duration {
        self.failures += 1;
        let text = match last {
            Some(Err(e)) => describe_connection_error(&e, &self.broker),
            _ => format!("the MQTT session with {} ended", self.broker),
        };
        if text != self.last_error {
            tracing::warn!("{text}; {meanwhile}");
            self.last_error = text;
        }
        backoff(self.failures)
    }
}

/// The wall clock, Unix ms.
pub(crate) fn unix_ms() -> u64 {
    crate::daemon::journal::unix_ms_now()
}

/// The running MQTT side of a daemon: the publisher and/or the aggregator.
pub struct Mqtt {
    pub publisher: Option<publisher::PublisherHandle>,
    pub aggregator: Option<aggregator::AggregatorHandle>,
}

impl Mqtt {
    /// Stops both sides: the publisher says goodbye (its status `offline`) and
    /// keeps how far the broker acknowledged; waits at most a few seconds.
    pub async fn stop(self) {
        if let Some(p) = self.publisher {
            p.stop().await;
        }
        if let Some(a) = self.aggregator {
            a.stop().await;
        }
    }
}

/// Starts what `[mqtt]` asks for (nothing when it is off). The publisher
/// reads the journal under `data_dir`; `hook` is what the journal must call
/// after each event line (see [`crate::daemon::journal::Journal::set_appended_hook`]).
pub fn start(
    config: &Config,
    hub: &Arc<crate::daemon::hub::Hub>,
) -> Result<Option<(Mqtt, Option<crate::daemon::journal::AppendedHook>)>, MqttError> {
    let m = &config.mqtt;
    if !m.enabled {
        return Ok(None);
    }
    let host = m.host_name();
    let mut hook = None;
    let publisher = if m.publish {
        let (handle, h) = publisher::start(config, &host, hub.clone())?;
        hook = Some(h);
        Some(handle)
    } else {
        None
    };
    let aggregator = if m.subscribe {
        Some(aggregator::start(config, &host, hub.clone())?)
    } else {
        None
    };
    Ok(Some((
        Mqtt {
            publisher,
            aggregator,
        },
        hook,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_and_arbiter_topics_are_separate_trees() {
        let t = Topics::new("open");
        assert_eq!(
            t.events(LogStream::Public, 12),
            "eboard/open/boards/12/events"
        );
        assert_eq!(
            t.events(LogStream::Arbiter, 12),
            "eboard-arbiter/open/boards/12/events"
        );
        assert!(!t.events(LogStream::Arbiter, 1).starts_with("eboard/"));
        assert!(!t.replay("h").starts_with("eboard/"));
        assert_eq!(
            t.parse_board_topic("eboard-arbiter/open/boards/7/state"),
            Some((LogStream::Arbiter, 7, "state"))
        );
        assert_eq!(
            t.parse_board_topic("eboard/open/boards/7/events"),
            Some((LogStream::Public, 7, "events"))
        );
        assert_eq!(t.parse_board_topic("eboard/other/boards/7/events"), None);
        assert_eq!(t.host_status("hall-a"), "eboard/open/hosts/hall-a/status");
    }
}
