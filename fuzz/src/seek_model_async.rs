//! The async front of the random-access model (`seek_model.rs`, its
//! sibling module): `AsyncCipherReader` over the model's [`Source`] as
//! tokio's `AsyncRead + AsyncSeek`, each op polled by hand with a no-op
//! waker (no runtime). The source's scheduled `Pending`s come back to the
//! driver, which then polls the same op again or drops it (a dropped
//! future: the caller goes on with the next op), as its drop pattern says.

use std::future::Future;
use std::io::{self, ErrorKind, SeekFrom};
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use cipherio::ReaderBuilder;
use cipherio::tokio::AsyncCipherReader;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncSeek, ReadBuf};

use super::seek_model::{Case, Counters, Fault, Injected, ModelFront, Out, Pattern, Source};

impl AsyncRead for Source {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.next_fault() {
            Some(Fault::Pending) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Some(Fault::Error(kind)) => Poll::Ready(Err(io::Error::new(kind, Injected))),
            None => {
                let n = this.copy_out(buf.initialize_unfilled());
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
        }
    }
}

/// `start_seek` only records the target (it cannot pend; it is not a
/// numbered call); `poll_complete` is the call that may fail or pend, and
/// a failed one leaves no seek in flight.
impl AsyncSeek for Source {
    fn start_seek(self: Pin<&mut Self>, position: SeekFrom) -> io::Result<()> {
        self.get_mut().in_flight = Some(position);
        Ok(())
    }

    fn poll_complete(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<u64>> {
        let this = self.get_mut();
        match this.next_fault() {
            Some(Fault::Pending) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Some(Fault::Error(kind)) => {
                this.in_flight = None;
                Poll::Ready(Err(io::Error::new(kind, Injected)))
            }
            None => match this.in_flight.take() {
                Some(to) => Poll::Ready(this.move_to(to)),
                None => Poll::Ready(this.move_to(SeekFrom::Current(0))),
            },
        }
    }
}

/// The async front: the reader, and after its `k`-th `Pending` the op is
/// dropped when `drops.at(k)` (or `k == drop_at`), else polled again.
pub struct AsyncFront {
    pub r: AsyncCipherReader<Source>,
    counters: Rc<Counters>,
    drops: Pattern,
    drop_at: Option<usize>,
    /// `Pending`s the reader returned.
    pendings: usize,
}

impl AsyncFront {
    /// The async reader over `case`'s source.
    pub fn new(
        case: &Case<'_>,
        builder: ReaderBuilder,
        drops: Pattern,
        drop_at: Option<usize>,
    ) -> AsyncFront {
        let src = Source::new(case.source.clone(), case.start, case.faults.clone());
        let counters = Rc::clone(&src.counters);
        AsyncFront {
            r: builder.build_async(src),
            counters,
            drops,
            drop_at,
            pendings: 0,
        }
    }
}

/// Polls `poll` until it is ready (`Some`) or the front's drop pattern
/// drops it after a `Pending` (`None`). A `Pending` must come from the
/// source's: the reader never pends on its own (no waker would wake it).
fn run<T>(
    counters: &Counters,
    pendings: &mut usize,
    drops: Pattern,
    drop_at: Option<usize>,
    mut poll: impl FnMut(&mut Context<'_>) -> Poll<T>,
) -> Option<T> {
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        let before = counters.pendings.get();
        match poll(&mut cx) {
            Poll::Ready(t) => return Some(t),
            Poll::Pending => {
                assert!(
                    counters.pendings.get() > before,
                    "the reader returned Pending without its source doing so"
                );
                let k = *pendings;
                *pendings += 1;
                if drops.at(k) || drop_at == Some(k) {
                    return None;
                }
            }
        }
    }
}

fn out<T>(r: Option<io::Result<T>>) -> Out<T> {
    match r {
        None => Out::Dropped,
        Some(Ok(t)) => Out::Ok(t),
        Some(Err(e)) => Out::Err(e),
    }
}

impl ModelFront for AsyncFront {
    fn read(&mut self, buf: &mut [u8]) -> Out<usize> {
        let r = &mut self.r;
        let got = run(
            &self.counters,
            &mut self.pendings,
            self.drops,
            self.drop_at,
            |cx| {
                let mut rb = ReadBuf::new(&mut buf[..]);
                match Pin::new(&mut *r).poll_read(cx, &mut rb) {
                    Poll::Ready(res) => Poll::Ready(res.map(|()| rb.filled().len())),
                    Poll::Pending => {
                        assert!(rb.filled().is_empty(), "a Pending read filled the buffer");
                        Poll::Pending
                    }
                }
            },
        );
        out(got)
    }

    /// As tokio's `read_exact`: reads until the buffer is full, an error
    /// (returned, what was read before it kept) or the end
    /// (`UnexpectedEof`); a drop keeps what was read before it.
    fn read_exact(&mut self, buf: &mut [u8]) -> (Option<usize>, Out<()>) {
        let mut done = 0;
        while done < buf.len() {
            match self.read(&mut buf[done..]) {
                Out::Ok(0) => {
                    let eof = io::Error::new(ErrorKind::UnexpectedEof, "early eof");
                    return (Some(done), Out::Err(eof));
                }
                Out::Ok(n) => done += n,
                Out::Err(e) => return (Some(done), Out::Err(e)),
                Out::Dropped => return (Some(done), Out::Dropped),
            }
        }
        (Some(done), Out::Ok(()))
    }

    fn fill(&mut self, x: usize) -> Out<(Vec<u8>, usize)> {
        let r = &mut self.r;
        let got = run(
            &self.counters,
            &mut self.pendings,
            self.drops,
            self.drop_at,
            |cx| Pin::new(&mut *r).poll_fill_buf(cx).map_ok(<[u8]>::to_vec),
        );
        match out(got) {
            Out::Ok(shown) => {
                let c = x % (shown.len() + 1);
                Pin::new(&mut self.r).consume(c);
                Out::Ok((shown, c))
            }
            Out::Err(e) => Out::Err(e),
            Out::Dropped => Out::Dropped,
        }
    }

    fn seek(&mut self, to: SeekFrom) -> Out<u64> {
        if let Err(e) = Pin::new(&mut self.r).start_seek(to) {
            return Out::Err(e);
        }
        let r = &mut self.r;
        out(run(
            &self.counters,
            &mut self.pendings,
            self.drops,
            self.drop_at,
            |cx| Pin::new(&mut *r).poll_complete(cx),
        ))
    }

    fn len(&mut self) -> Out<u64> {
        let mut fut = pin!(self.r.plaintext_len());
        out(run(
            &self.counters,
            &mut self.pendings,
            self.drops,
            self.drop_at,
            |cx| fut.as_mut().poll(cx),
        ))
    }

    fn position_now(&mut self) -> Option<u64> {
        None
    }

    fn counters(&self) -> Rc<Counters> {
        Rc::clone(&self.counters)
    }
}
