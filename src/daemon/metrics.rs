//! Prometheus metrics, served at `GET /metrics` on the HTTP listener.
//!
//! What an operator watching a hall wants on a graph: how many boards are
//! there and online, whether bytes keep arriving and decoding, how often links
//! drop and come back, how many moves and alerts flow, and how long a move
//! takes from the board's bytes to the feeds. The counters are plain atomics
//! (`prometheus-client`), cheap enough to bump on the daemon's hot path; the
//! gauges that describe the hub (boards, online, games) are read from it when
//! scraped, so they can never drift from what the dashboard shows.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::events::{GameEvent, Severity, TrackerEvent};

/// Upper bounds of the move latency histogram, in seconds: sub-millisecond
/// resolution where the target is (p99 ≤ 1 ms), up to the seconds a move can
/// wait for its completing picture.
const LATENCY_BUCKETS: [f64; 14] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Upper bounds of the reading lag histogram, in seconds: near nothing on a
/// host that keeps up, seconds on one that does not.
const LAG_BUCKETS: [f64; 10] = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0];

/// The daemon's metrics. One per [`crate::daemon::hub::Hub`]; the HTTP side reads the
/// live hub's.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    boards: Gauge,
    boards_online: Gauge,
    games_in_progress: Gauge,
    /// Frames decoded from boards.
    pub frames: Counter,
    /// Bytes or frames the decoder had to skip (garbage, cut messages, bad checksums).
    pub decode_errors: Counter,
    /// A board (or bus) answered again and was resynchronised from a fresh dump.
    pub resyncs: Counter,
    /// A link went down (EOF, I/O error, silence).
    pub link_down: Counter,
    /// Journal writes or syncs that failed (the daemon goes on; the log says why).
    pub journal_errors: Counter,
    moves: Counter,
    retractions: Counter,
    results: Counter,
    alerts: Family<Vec<(&'static str, &'static str)>, Counter>,
    /// From a chunk's arrival to the publication of the verified move it completed.
    pub move_latency: Histogram,
    /// How long each chunk waited between its read from the port and the loop
    /// taking it: a daemon falling behind its boards on a loaded host. A
    /// histogram, so that a scrape after the loop caught up still shows it.
    pub reading_lag: Histogram,
    /// MQTT aggregator: events from other hosts applied to the hub.
    pub mqtt_applied: Counter,
    /// MQTT aggregator: events received again and dropped (QoS 1, replays).
    pub mqtt_duplicates: Counter,
    /// MQTT aggregator: replay requests sent for missing events.
    pub mqtt_replays_asked: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("eboard");
        let m = Metrics {
            boards: Gauge::default(),
            boards_online: Gauge::default(),
            games_in_progress: Gauge::default(),
            frames: Counter::default(),
            decode_errors: Counter::default(),
            resyncs: Counter::default(),
            link_down: Counter::default(),
            journal_errors: Counter::default(),
            moves: Counter::default(),
            retractions: Counter::default(),
            results: Counter::default(),
            alerts: Family::default(),
            move_latency: Histogram::new(LATENCY_BUCKETS),
            reading_lag: Histogram::new(LAG_BUCKETS),
            mqtt_applied: Counter::default(),
            mqtt_duplicates: Counter::default(),
            mqtt_replays_asked: Counter::default(),
            registry: Registry::default(),
        };
        registry.register("boards", "Boards known to the daemon", m.boards.clone());
        registry.register(
            "boards_online",
            "Boards whose link is up",
            m.boards_online.clone(),
        );
        registry.register(
            "games_in_progress",
            "Games with moves and no result",
            m.games_in_progress.clone(),
        );
        registry.register("frames", "Frames decoded from boards", m.frames.clone());
        registry.register(
            "decode_errors",
            "Input the decoder skipped (garbage, cut messages, bad checksums)",
            m.decode_errors.clone(),
        );
        registry.register(
            "resyncs",
            "Links that came back and were resynchronised from a dump",
            m.resyncs.clone(),
        );
        registry.register(
            "link_down",
            "Links that went down (unplugged, I/O error, silence)",
            m.link_down.clone(),
        );
        registry.register(
            "journal_errors",
            "Journal writes or syncs that failed",
            m.journal_errors.clone(),
        );
        registry.register("moves", "Verified moves published", m.moves.clone());
        registry.register(
            "retractions",
            "Retractions published (moves withdrawn)",
            m.retractions.clone(),
        );
        registry.register("results", "Game results published", m.results.clone());
        registry.register(
            "alerts",
            "Arbiter alerts raised, by Article and severity",
            m.alerts.clone(),
        );
        registry.register(
            "move_latency_seconds",
            "From the arrival of the bytes that completed a move to its publication",
            m.move_latency.clone(),
        );
        registry.register(
            "reading_lag_seconds",
            "From a chunk's read from its port to the loop taking it (the daemon behind its boards)",
            m.reading_lag.clone(),
        );
        registry.register(
            "mqtt_applied",
            "Events from other hosts applied (MQTT aggregator)",
            m.mqtt_applied.clone(),
        );
        registry.register(
            "mqtt_duplicates",
            "Events from other hosts received again and dropped (MQTT aggregator)",
            m.mqtt_duplicates.clone(),
        );
        registry.register(
            "mqtt_replays_asked",
            "Requests to hosts to send missing events again (MQTT aggregator)",
            m.mqtt_replays_asked.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Counts one tracker event the hub publishes.
    pub fn count_event(&self, event: &TrackerEvent) {
        match event {
            TrackerEvent::Game(GameEvent::Move(m)) if m.verified => {
                self.moves.inc();
            }
            TrackerEvent::Game(GameEvent::Retraction { .. }) => {
                self.retractions.inc();
            }
            TrackerEvent::Game(GameEvent::Result { .. }) => {
                self.results.inc();
            }
            TrackerEvent::Alert(a) => {
                let severity = match a.severity {
                    Severity::Info => "info",
                    Severity::Warning => "warning",
                    Severity::Error => "error",
                };
                let article = article_label(&a.article);
                self.alerts
                    .get_or_create(&vec![("article", article), ("severity", severity)])
                    .inc();
            }
            TrackerEvent::Game(_) | TrackerEvent::Resolved(_) => {}
        }
    }

    /// The text exposition, with the hub gauges set to `boards`, `online`, `games`.
    pub fn render(&self, boards: usize, online: usize, games: usize) -> String {
        self.boards.set(boards as i64);
        self.boards_online.set(online as i64);
        self.games_in_progress.set(games as i64);
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// The Article as a `'static` label value. Articles come from the tracker's own
/// fixed set; anything else is folded into "other" so a bug cannot grow the
/// label set without bound.
fn article_label(article: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "3.7.5", "4.4.2", "5.1.1", "5.1.2", "5.2.1", "5.2.2", "5.2.3", "6.9", "6.10.2", "6.11",
        "7.1", "7.2.1", "7.2.2", "7.3", "7.4", "7.5.1", "7.5.2", "7.5.3", "7.5.4", "7.6", "8.4",
        "9.2", "9.3", "9.6.1", "9.6.2", "A.4.2", "B.4",
    ];
    KNOWN
        .iter()
        .find(|&&k| k == article)
        .copied()
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Alert;
    use crate::events::AlertKind;

    #[test]
    fn exposition_has_every_family_and_counts_events() {
        let m = Metrics::new();
        m.frames.inc_by(3);
        m.move_latency.observe(0.0004);
        m.count_event(&TrackerEvent::Alert(Alert {
            id: 1,
            penalty: None,
            kind: AlertKind::IllegalMove,
            article: "7.5.1".into(),
            severity: Severity::Error,
            squares: vec![],
            message: String::new(),
        }));
        let text = m.render(4, 3, 2);
        for line in [
            "eboard_boards 4",
            "eboard_boards_online 3",
            "eboard_games_in_progress 2",
            "eboard_frames_total 3",
            "eboard_alerts_total{article=\"7.5.1\",severity=\"error\"} 1",
            "eboard_move_latency_seconds_bucket{le=\"0.0005\"} 1",
            "eboard_move_latency_seconds_count 1",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn unknown_articles_fold_into_other() {
        assert_eq!(article_label("7.5.1"), "7.5.1");
        assert_eq!(article_label("99.9"), "other");
    }
}
