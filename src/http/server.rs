//! The HTTP/1.1 server loop: axum's router behind a connection cap and
//! timeouts, so that clients can never take the descriptors the journal and
//! the board ports need (see [`crate::daemon::limits`]).
//!
//! * **Cap.** At most [`crate::daemon::limits::FdBudget::http_connections`]
//!   connections are open at once (streams and WebSockets included). Beyond
//!   it a new connection gets a short `503` and is closed at once, and the log
//!   says so (once per [`SHED_LOG_EVERY`], with the count).
//! * **Request timeout.** A client must send a request's headers within
//!   `request_timeout` of the connection opening, or of the previous answer on
//!   a kept-alive connection; a half-sent request is dropped then.
//! * **Idle timeout.** A connection on which nothing moved either way for
//!   `idle_timeout` is closed (a client gone without closing, a body sent one
//!   byte a minute). Streams stay alive by themselves: SSE writes a comment
//!   line every 15 s and the WebSocket a ping.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

/// How often a shedding server says so in the log.
pub const SHED_LOG_EVERY: Duration = Duration::from_secs(10);

/// Connection limits of the HTTP side (`[http]` in the configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once, at most (the descriptor budget may allow fewer).
    pub max_connections: usize,
    /// Time a client has to send a request's headers.
    pub request_timeout: Duration,
    /// Time a connection may stay with nothing moved either way.
    pub idle_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: 4096,
            request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// Serves `app` on `listener` within `limits` until the task is dropped.
pub async fn serve(listener: TcpListener, app: Router, limits: ConnectionLimits) -> io::Result<()> {
    let budget = crate::daemon::limits::budget();
    let open = Arc::new(AtomicUsize::new(0));
    let mut shed = Shedding::default();
    let mut accept_failed_logged: Option<Instant> = None;
    tracing::info!(
        "HTTP: at most {} connections at once (file limit {}, {} descriptors kept for the \
         journal and the boards; [http] max_connections = {}), requests within {} ms, idle \
         connections closed after {} ms",
        budget.http_connections(limits.max_connections),
        budget.limit(),
        budget.reserved(),
        limits.max_connections,
        limits.request_timeout.as_millis(),
        limits.idle_timeout.as_millis()
    );
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of descriptors (EMFILE, ENFILE) or memory: the cap
                // should prevent it, but never spin on it.
                if accept_failed_logged.is_none_or(|t| t.elapsed() >= SHED_LOG_EVERY) {
                    tracing::error!(
                        "HTTP: cannot accept connections ({e}); retrying. Raise the file limit \
                         (LimitNOFILE= in the service unit) or lower [http] max_connections"
                    );
                    accept_failed_logged = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let cap = budget.http_connections(limits.max_connections);
        if open.load(Ordering::Relaxed) >= cap {
            shed.refuse(stream, peer, cap, budget);
            continue;
        }
        open.fetch_add(1, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        let io = Guarded::new(stream, limits.idle_timeout, Slot(Arc::clone(&open)));
        let service = TowerToHyperService::new(app.clone());
        let request_timeout = limits.request_timeout;
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(request_timeout)
                .keep_alive(true);
            // Errors are the client's (reset, timeout, garbage): nothing to do.
            let _ = builder
                .serve_connection(TokioIo::new(io), service)
                .with_upgrades()
                .await;
        });
    }
}

/// Connection errors that concern one client only (axum's own list).
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// The count of open connections, one less when dropped (with the socket:
/// an upgraded WebSocket keeps its slot until it ends).
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Connections refused since the last log line.
#[derive(Default)]
struct Shedding {
    refused: u64,
    last_log: Option<Instant>,
}

impl Shedding {
    fn refuse(
        &mut self,
        stream: TcpStream,
        peer: std::net::SocketAddr,
        cap: usize,
        budget: &crate::daemon::limits::FdBudget,
    ) {
        self.refused += 1;
        if self.last_log.is_none_or(|t| t.elapsed() >= SHED_LOG_EVERY) {
            tracing::warn!(
                "HTTP: {cap} connections open, the most allowed; refusing new ones (the last from \
                 {peer}; {} refused since the last report). The file limit is {} and {} \
                 descriptors are kept for the journal and the boards: raise LimitNOFILE= or \
                 [http] max_connections if these clients are wanted, or look for a client that \
                 opens connections and leaves them idle",
                self.refused,
                budget.limit(),
                budget.reserved()
            );
            self.refused = 0;
            self.last_log = Some(Instant::now());
        }
        // A short answer if the socket takes it now; the connection is
        // closed either way, without waiting for the client.
        let _ = stream.try_write(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nRetry-After: 5\r\n\
              Connection: close\r\nContent-Length: 43\r\n\r\ntoo many connections open; try again later\n",
        );
    }
}

/// A client's socket that fails once nothing moved either way for `idle`,
/// and holds its [`Slot`].
struct Guarded {
    stream: TcpStream,
    idle: Duration,
    last: Instant,
    timer: Pin<Box<Sleep>>,
    _slot: Slot,
}

impl Guarded {
    fn new(stream: TcpStream, idle: Duration, slot: Slot) -> Guarded {
        Guarded {
            stream,
            idle,
            last: Instant::now(),
            timer: Box::pin(tokio::time::sleep(idle)),
            _slot: slot,
        }
    }

    /// Something moved: the idle time starts again.
    fn moved(&mut self) {
        self.last = Instant::now();
    }

    /// The outcome of a write: bytes written count as movement.
    fn wrote(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match polled {
            Poll::Ready(result) => {
                if matches!(result, Ok(n) if n > 0) {
                    self.moved();
                }
                Poll::Ready(result)
            }
            Poll::Pending => self.stalled(cx),
        }
    }

    /// Nothing could move now: fail if nothing did for `idle`, else wake
    /// the task when that time comes.
    fn stalled<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let deadline = self.last + self.idle;
        if Instant::now() >= deadline {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "nothing moved on the connection for the idle timeout",
            )));
        }
        let deadline = tokio::time::Instant::from_std(deadline);
        if self.timer.deadline() != deadline {
            self.timer.as_mut().reset(deadline);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "nothing moved on the connection for the idle timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    this.moved();
                }
                Poll::Ready(result)
            }
            Poll::Pending => this.stalled(cx),
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.wrote(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.wrote(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.stream).poll_flush(cx) {
            Poll::Ready(result) => Poll::Ready(result),
            Poll::Pending => this.stalled(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
