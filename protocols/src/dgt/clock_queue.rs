//! Clock commands sent one at a time, each waiting for its ack.
//!
//! The board passes a clock command on to the DGT XL / DGT 3000 and answers
//! with an ack inside a BWTIME once the clock has taken it (dgt.md §2.3). The
//! board holds about one command at a time and the clock is polled only two or
//! three times a second, so a second command sent before the first is acked
//! may be lost (dgt.md §2.4). Hence this queue: one command in flight; its ack
//! (ack1 = the command's id) completes it; no ack within [`ACK_TIMEOUT_MS`],
//! or an error ack (ack0 `0x40`, e.g. set-and-run outside mode 23), sends it
//! once more; a second failure gives it up with an outcome that says why.
//!
//! Sans-IO and time-injected like the rest of the crate: the caller writes the
//! bytes [`ClockQueue::poll_transmit`] returns, feeds every clock ack to
//! [`ClockQueue::on_ack`], and calls `poll_transmit` again by
//! [`ClockQueue::next_deadline`].

use std::collections::VecDeque;

use super::types::{ClockAck, ClockCommand, Command};

/// How long to wait for an ack before sending the command again. Acks come
/// within 1–2 s (dgt.md §2.4).
pub const ACK_TIMEOUT_MS: u64 = 2_000;

/// How often a command is sent at most: once, and once more after a missing
/// or error ack.
pub const MAX_ATTEMPTS: u8 = 2;

/// ack0 of an error ack.
const ACK_ERROR: u8 = 0x40;

/// How a queued command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockOutcome {
    /// The clock acked it, at the `attempts`-th sending.
    Acked { attempts: u8 },
    /// The clock answered both sendings with an error ack.
    Refused,
    /// No ack came for either sending.
    NoAnswer,
    /// Given up without an answer: the link to the board was lost.
    LinkLost,
}

impl ClockOutcome {
    /// Why the command did not take effect, worded for an arbiter, or `None`
    /// when it did.
    pub fn failure(&self) -> Option<&'static str> {
        match self {
            ClockOutcome::Acked { .. } => None,
            ClockOutcome::Refused => Some(
                "the clock refused the command twice: a DGT 3000 takes times from the board only in mode 23; set the clock to mode 23 and try again, or set the times on the clock by hand",
            ),
            ClockOutcome::NoAnswer => Some(
                "the clock did not answer, twice: check that it is switched on and that its cable to the board is plugged in, then try again",
            ),
            ClockOutcome::LinkLost => Some(crate::family::COMMAND_LINK_LOST),
        }
    }
}

/// The queue is full: the command was not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0} clock commands are already waiting for this board; wait for them to be answered")]
pub struct QueueFull(pub usize);

#[derive(Clone, Debug)]
struct InFlight<T> {
    tag: T,
    command: ClockCommand,
    /// When the last sending went out; `None`: due to be sent (again) now.
    sent_ms: Option<u64>,
    attempts: u8,
    refused: bool,
}

/// Clock commands for one board, each tagged with the caller's `T` (a request
/// to answer, say), sent one at a time.
#[derive(Clone, Debug)]
pub struct ClockQueue<T> {
    waiting: VecDeque<(T, ClockCommand)>,
    in_flight: Option<InFlight<T>>,
    outcomes: VecDeque<(T, ClockOutcome)>,
    capacity: usize,
}

impl<T> ClockQueue<T> {
    /// A queue holding at most `capacity` commands besides the one in flight.
    pub fn new(capacity: usize) -> ClockQueue<T> {
        ClockQueue {
            waiting: VecDeque::new(),
            in_flight: None,
            outcomes: VecDeque::new(),
            capacity,
        }
    }

    /// Queues `command`; it is sent once every earlier one has ended. A full
    /// queue gives the tag back, so the caller can answer it.
    pub fn push(&mut self, tag: T, command: ClockCommand) -> Result<(), (T, QueueFull)> {
        if self.waiting.len() >= self.capacity {
            let n = self.waiting.len();
            return Err((tag, QueueFull(n)));
        }
        self.waiting.push_back((tag, command));
        Ok(())
    }

    /// Commands not yet ended, the one in flight included.
    pub fn len(&self) -> usize {
        self.waiting.len() + usize::from(self.in_flight.is_some())
    }

    /// Nothing queued and nothing in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Nothing queued, nothing in flight and no outcome left to take: the
    /// caller has nothing to do until it pushes a command.
    pub fn is_idle(&self) -> bool {
        self.is_empty() && self.outcomes.is_empty()
    }

    /// The bytes to write now, if any: the next command when none is in
    /// flight, or the one in flight again once its ack is overdue or it was
    /// refused. A command that has used its attempts ends here (see
    /// [`ClockQueue::take_outcome`]) and the next one is sent.
    pub fn poll_transmit(&mut self, now_ms: u64) -> Option<Vec<u8>> {
        loop {
            match &mut self.in_flight {
                Some(f) => {
                    let overdue = f.sent_ms.is_none_or(|sent| now_ms >= sent + ACK_TIMEOUT_MS);
                    if !overdue {
                        return None;
                    }
                    if f.attempts >= MAX_ATTEMPTS {
                        let f = self.in_flight.take().expect("checked");
                        let outcome = if f.refused {
                            ClockOutcome::Refused
                        } else {
                            ClockOutcome::NoAnswer
                        };
                        self.outcomes.push_back((f.tag, outcome));
                        continue;
                    }
                    f.attempts += 1;
                    f.sent_ms = Some(now_ms);
                    let mut bytes = Vec::new();
                    Command::Clock(f.command.clone()).encode(&mut bytes);
                    return Some(bytes);
                }
                None => {
                    let (tag, command) = self.waiting.pop_front()?;
                    self.in_flight = Some(InFlight {
                        tag,
                        command,
                        sent_ms: None,
                        attempts: 0,
                        refused: false,
                    });
                }
            }
        }
    }

    /// A clock ack arrived. The one answering the command in flight (ack1 =
    /// its id) ends it, or, as an error ack, has it sent again. Acks the
    /// clock makes up itself (ack1 ≥ 0x80: a button, "clock ready") and acks
    /// of other commands answer nothing here.
    pub fn on_ack(&mut self, ack: &ClockAck) {
        let [ack0, ack1, ..] = ack.bytes;
        let Some(f) = self.in_flight.as_mut() else {
            return;
        };
        if ack1 >= 0x80 || ack1 != f.command.id() || f.sent_ms.is_none() {
            return;
        }
        if ack0 == ACK_ERROR {
            f.refused = true;
            // Due at once: resent, or given up, at the next poll.
            f.sent_ms = None;
            return;
        }
        // ack0 0x10 (a normal ack), or a status byte no source describes:
        // either way the clock answered this command.
        let f = self.in_flight.take().expect("checked");
        self.outcomes.push_back((
            f.tag,
            ClockOutcome::Acked {
                attempts: f.attempts,
            },
        ));
    }

    /// When [`ClockQueue::poll_transmit`] has something to do next without
    /// an ack arriving: now for a command due, the ack deadline of the one in
    /// flight, or `None` when the queue is empty.
    pub fn next_deadline(&self) -> Option<u64> {
        match &self.in_flight {
            Some(f) => Some(f.sent_ms.map_or(0, |sent| sent + ACK_TIMEOUT_MS)),
            None if self.waiting.is_empty() => None,
            None => Some(0),
        }
    }

    /// The next ended command and how it ended, oldest first.
    pub fn take_outcome(&mut self) -> Option<(T, ClockOutcome)> {
        self.outcomes.pop_front()
    }

    /// The link to the board is gone: every command not yet acked ends with
    /// [`ClockOutcome::LinkLost`] (a command resent to a board reconnected
    /// minutes later would set times that are no longer right).
    pub fn link_lost(&mut self) {
        if let Some(f) = self.in_flight.take() {
            self.outcomes.push_back((f.tag, ClockOutcome::LinkLost));
        }
        while let Some((tag, _)) = self.waiting.pop_front() {
            self.outcomes.push_back((tag, ClockOutcome::LinkLost));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dgt::Hms;

    fn set(minutes: u8) -> ClockCommand {
        let hms = Hms {
            hours: 0,
            minutes,
            seconds: 0,
        };
        ClockCommand::SetAndRun {
            left: hms,
            right: hms,
            flags: 0x01,
        }
    }

    fn ack(ack0: u8, ack1: u8) -> ClockAck {
        ClockAck {
            bytes: [ack0, ack1, 0, 0],
        }
    }

    fn bytes(c: &ClockCommand) -> Vec<u8> {
        let mut b = Vec::new();
        Command::Clock(c.clone()).encode(&mut b);
        b
    }

    #[test]
    fn one_command_in_flight_and_the_next_after_its_ack() {
        let mut q = ClockQueue::new(8);
        q.push(1, set(5)).unwrap();
        q.push(2, ClockCommand::Beep { duration: 3 }).unwrap();
        assert_eq!(q.next_deadline(), Some(0));
        assert_eq!(q.poll_transmit(100), Some(bytes(&set(5))));
        // The second waits for the first's ack.
        assert_eq!(q.poll_transmit(150), None);
        assert_eq!(q.next_deadline(), Some(2_100));
        // A button and an ack for another command answer nothing.
        q.on_ack(&ack(0x10, 0x88));
        q.on_ack(&ack(0x10, 0x0b));
        assert_eq!(q.take_outcome(), None);
        q.on_ack(&ack(0x10, 0x0a));
        assert_eq!(
            q.take_outcome(),
            Some((1, ClockOutcome::Acked { attempts: 1 }))
        );
        assert_eq!(
            q.poll_transmit(400),
            Some(bytes(&ClockCommand::Beep { duration: 3 }))
        );
        q.on_ack(&ack(0x10, 0x0b));
        assert_eq!(
            q.take_outcome(),
            Some((2, ClockOutcome::Acked { attempts: 1 }))
        );
        assert!(q.is_empty());
        assert!(q.is_idle());
        assert_eq!(q.next_deadline(), None);
    }

    #[test]
    fn no_ack_sends_once_more_then_gives_up() {
        let mut q = ClockQueue::new(8);
        q.push("a", set(5)).unwrap();
        q.push("b", set(6)).unwrap();
        assert!(q.poll_transmit(0).is_some());
        assert_eq!(q.poll_transmit(1_999), None);
        assert_eq!(q.poll_transmit(2_000), Some(bytes(&set(5))), "the resend");
        assert_eq!(q.poll_transmit(3_999), None);
        // The second attempt's deadline passes: "a" ends, "b" goes out.
        assert_eq!(q.poll_transmit(4_000), Some(bytes(&set(6))));
        assert_eq!(q.take_outcome(), Some(("a", ClockOutcome::NoAnswer)));
        // An ack of set-and-run now answers "b", the command in flight: the
        // clock holds the newest times sent, which are b's.
        q.on_ack(&ack(0x10, 0x0a));
        assert_eq!(
            q.take_outcome(),
            Some(("b", ClockOutcome::Acked { attempts: 1 }))
        );
    }

    #[test]
    fn an_error_ack_is_resent_at_once_and_refused_the_second_time() {
        let mut q = ClockQueue::new(8);
        q.push(7, set(5)).unwrap();
        assert!(q.poll_transmit(0).is_some());
        q.on_ack(&ack(0x40, 0x0a));
        assert_eq!(q.next_deadline(), Some(0));
        assert_eq!(q.poll_transmit(300), Some(bytes(&set(5))));
        q.on_ack(&ack(0x40, 0x0a));
        assert_eq!(q.poll_transmit(600), None);
        assert_eq!(q.take_outcome(), Some((7, ClockOutcome::Refused)));
        assert!(ClockOutcome::Refused.failure().unwrap().contains("mode 23"));
    }

    #[test]
    fn an_error_then_an_ack_is_success_at_the_second_attempt() {
        let mut q = ClockQueue::new(8);
        q.push((), set(5)).unwrap();
        q.poll_transmit(0);
        q.on_ack(&ack(0x40, 0x0a));
        q.poll_transmit(250);
        q.on_ack(&ack(0x10, 0x0a));
        assert_eq!(
            q.take_outcome(),
            Some(((), ClockOutcome::Acked { attempts: 2 }))
        );
    }

    #[test]
    fn an_ack_before_anything_was_sent_answers_nothing() {
        let mut q = ClockQueue::new(8);
        q.push(1, set(5)).unwrap();
        q.on_ack(&ack(0x10, 0x0a));
        assert_eq!(q.take_outcome(), None);
        assert!(q.poll_transmit(0).is_some());
    }

    #[test]
    fn a_full_queue_refuses_and_a_lost_link_ends_everything() {
        let mut q = ClockQueue::new(2);
        q.push(1, set(1)).unwrap();
        q.push(2, set(2)).unwrap();
        assert_eq!(q.push(3, set(3)), Err((3, QueueFull(2))));
        q.poll_transmit(0);
        q.push(3, set(3)).unwrap();
        q.link_lost();
        assert!(q.is_empty() && !q.is_idle(), "outcomes to take");
        let ended: Vec<_> = std::iter::from_fn(|| q.take_outcome()).collect();
        assert_eq!(
            ended,
            vec![
                (1, ClockOutcome::LinkLost),
                (2, ClockOutcome::LinkLost),
                (3, ClockOutcome::LinkLost)
            ]
        );
        assert!(q.is_empty());
    }
}
