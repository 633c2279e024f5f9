//! Assembling the daemon's HTTP side from the configuration: the arbiter token,
//! the tournament data and the listener. Used by `run` and by the demo, so both
//! serve exactly the same feeds and dashboard.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::daemon::config::{Config, MIN_TOKEN_CHARS};
use crate::daemon::hub::Hub;
use crate::http::FeedConfig;
use crate::operator::{pairings_path, rulings_path, CommandSender, Desk};
use crate::publish::Tournament;

/// The arbiter token: the configured one, else the one kept in
/// `<data_dir>/arbiter-token`, made (32 random hex digits, mode 0600) on first use
/// so that it survives restarts and an operator can read it from the file.
///
/// A token file is held to the same rule as a configured token (at least
/// [`MIN_TOKEN_CHARS`] characters, no spaces): a short one is refused rather
/// than protecting the dashboard with a guessable secret. A token file that
/// other users may read is closed to them (0600) and the log says so.
pub fn arbiter_token(config: &Config) -> anyhow::Result<String> {
    if let Some(token) = &config.http.arbiter_token {
        return Ok(token.clone());
    }
    let path = token_path(&config.storage.data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => {
            let token = text.trim();
            let chars = token.chars().count();
            if chars < MIN_TOKEN_CHARS || token.chars().any(char::is_whitespace) {
                anyhow::bail!(
                    "the arbiter token in {} is unusable ({chars} characters{}): a token needs at \
                     least {MIN_TOKEN_CHARS} characters without spaces; delete the file to have \
                     one made, or write a longer one",
                    path.display(),
                    if token.chars().any(char::is_whitespace) {
                        ", with spaces"
                    } else {
                        ""
                    }
                );
            }
            if crate::files::make_private(&path).with_context(|| {
                format!(
                    "cannot make the arbiter token {} readable by the daemon's user only; \
                     run `chmod 600` on it",
                    path.display()
                )
            })? {
                tracing::warn!(
                    "the arbiter token {} was readable by other users; it is now mode 0600. \
                     Anyone who read it can use the dashboard: delete the file and restart to \
                     make a new token",
                    path.display()
                );
            }
            return Ok(token.to_owned());
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| {
                format!("cannot read the arbiter token {}; fix its permissions or delete it to make a new one", path.display())
            })
        }
    }
    let token: String = (0..16)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect();
    crate::files::prepare_data_dir(&config.storage.data_dir)?;
    let mut file = crate::files::options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .with_context(|| format!("cannot write the arbiter token to {}", path.display()))?;
    // An empty file that was there keeps its mode through the open above.
    file.set_permissions(std::fs::Permissions::from_mode(crate::files::FILE_MODE))
        .with_context(|| format!("cannot make the arbiter token {} private", path.display()))?;
    writeln!(file, "{token}")
        .with_context(|| format!("cannot write the arbiter token to {}", path.display()))?;
    Ok(token)
}

/// Where a generated arbiter token is kept.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("arbiter-token")
}

/// A running HTTP side.
#[derive(Clone, Debug)]
pub struct HttpInfo {
    /// The address actually bound (the configured port, or the one the system
    /// chose for port 0).
    pub addr: SocketAddr,
    pub token: String,
    /// Where the LiveChess-compatible API listens; `None` when it is switched
    /// off or its address could not be bound (logged with what to do).
    pub ebapi: Option<SocketAddr>,
}

/// Binds the configured listener and serves the feeds and the dashboard from
/// `hub` on a background task. Fails at once, with what to do, when the address
/// cannot be bound or the tournament data cannot be read.
pub async fn start_http(
    config: &Config,
    listen: SocketAddr,
    hub: Arc<Hub>,
) -> anyhow::Result<HttpInfo> {
    start_http_with_commands(config, listen, hub, None).await
}

/// [`start_http`] whose operator API sends board commands to a daemon through
/// `commands` (see [`crate::daemon::run_with_commands`]). Pairing changes are
/// kept in `<data_dir>/operator/pairings.json` either way.
pub async fn start_http_with_commands(
    config: &Config,
    listen: SocketAddr,
    hub: Arc<Hub>,
    commands: Option<CommandSender>,
) -> anyhow::Result<HttpInfo> {
    // The data directory first: every file below lives there, and a data_dir
    // that is a file must be reported as such, not as a token problem.
    crate::files::prepare_data_dir(&config.storage.data_dir)?;
    let tournament = Tournament::load(config.tournament.clone(), &config.pairings)
        .context("the [tournament] or [[pairing]] configuration is unusable")?;
    let token = arbiter_token(config)?;
    let listener = TcpListener::bind(listen).await.with_context(|| {
        format!(
            "cannot listen on {listen}: another program may use the port; set [http] listen \
             (or EBOARD_BRIDGE_HTTP_LISTEN) to a free address"
        )
    })?;
    let addr = listener
        .local_addr()
        .context("the listener has no address")?;
    let file = pairings_path(&config.storage.data_dir);
    // The error names the file and says what to do.
    let desk = Desk::open(tournament.clone(), file, commands)?;
    let feeds = FeedConfig {
        arbiter_token: token.clone(),
        tournament: Arc::new(tournament),
        pgn_dir: Some(config.storage.data_dir.join("broadcast")),
    };
    let desk = Arc::new(desk.with_rulings(rulings_path(&config.storage.data_dir)));
    let public = crate::http::public_view(&hub, &feeds.tournament);
    let lichess =
        crate::publish::lichess::start(&config.lichess, Arc::clone(&public), Arc::clone(&desk))
            .context("the Lichess push client cannot start")?;
    let router = crate::http::router_with_public(
        Arc::clone(&hub),
        Arc::clone(&public),
        feeds,
        Arc::clone(&desk),
        lichess,
    );
    let limits = config.http.connection_limits();
    tokio::spawn(async move {
        if let Err(e) = crate::http::server::serve(listener, router, limits).await {
            tracing::error!("the HTTP server stopped: {e}");
        }
    });
    let ebapi = start_ebapi(config, hub, public, desk).await;
    Ok(HttpInfo { addr, token, ebapi })
}

/// Serves the LiveChess-compatible API when `[ebapi]` says so. It is an
/// extra: a port already taken (LiveChess itself running on this machine)
/// is logged with what to do, and the daemon goes on following the boards.
async fn start_ebapi(
    config: &Config,
    live: Arc<Hub>,
    public: Arc<Hub>,
    desk: Arc<Desk>,
) -> Option<SocketAddr> {
    if !config.ebapi.enabled {
        return None;
    }
    let listen = config.ebapi.listen;
    let listener = match TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(
                "the LiveChess-compatible API cannot listen on {listen}: {e}. Another program \
                 (DGT LiveChess itself?) may use the port: stop it, or set [ebapi] listen (or \
                 EBOARD_BRIDGE_EBAPI_LISTEN) to a free address, or [ebapi] enabled = false. \
                 The boards are followed and the other feeds served meanwhile."
            );
            return None;
        }
    };
    let addr = listener.local_addr().ok()?;
    let api = crate::ebapi::Ebapi::new(live, public, desk, &config.ebapi.origins);
    // The HTTP side's timeouts; a cap of its own, well inside the descriptor
    // budget (a venue's EBAPI clients are a few tools and browsers).
    let limits = crate::http::server::ConnectionLimits {
        max_connections: config
            .http
            .max_connections
            .min(crate::ebapi::MAX_CONNECTIONS),
        ..config.http.connection_limits()
    };
    tokio::spawn(async move {
        if let Err(e) = crate::ebapi::serve_within(listener, api, limits).await {
            tracing::error!("the LiveChess-compatible API stopped: {e}");
        }
    });
    Some(addr)
}
