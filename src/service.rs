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

use crate::config::{Config, MIN_TOKEN_CHARS};
use crate::http::FeedConfig;
use crate::hub::Hub;
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
    let limits = config.http.connection_limits();
    tokio::spawn(async move {
        if let Err(e) = crate::http::serve_with_desk(listener, hub, feeds, desk, limits).await {
            tracing::error!("the HTTP server stopped: {e}");
        }
    });
    Ok(HttpInfo { addr, token })
}
