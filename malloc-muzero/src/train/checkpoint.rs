//! Checkpoints written beside training. Encoding and writing the two replay buffers took
//! 0.25-0.6 s on resnet50, every `checkpoint_every` iterations, while both cores waited;
//! copying the learner's state takes milliseconds. So the trainer copies it
//! ([`Snapshot::of`]) and a thread of its own writes it while the next iteration runs.
//! `latest.json` is still written last, so a kill leaves the previous checkpoint whole.

use super::learner::Learner;
use super::run_dir::{Latest, RunDir};
use super::TrainError;
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use muzero::ReplayBuffer;
use std::thread::JoinHandle;

/// The learner's state at the end of an iteration, detached from the learner.
pub(super) struct Snapshot {
    pub latest: Latest,
    pub weights: Vec<u8>,
    pub optimizer: Vec<u8>,
    pub replay: ReplayBuffer,
    pub demos: ReplayBuffer,
}

impl Snapshot {
    pub fn of(latest: Latest, learner: &Learner) -> Result<Snapshot, TrainError> {
        Ok(Snapshot {
            latest,
            weights: learner.net.to_bytes()?,
            optimizer: learner.opt.to_bytes()?,
            replay: learner.replay.clone(),
            demos: learner.demos.clone(),
        })
    }
}

/// The thread that writes checkpoints, fed over a channel of one slot: a snapshot waits
/// there while the one before is written, and a third waits for room, so at most two
/// copies of the buffers are held.
pub(super) struct CheckpointWriter {
    jobs: Option<Sender<Snapshot>>,
    done: Receiver<Result<(), TrainError>>,
    pending: usize,
    thread: Option<JoinHandle<()>>,
}

impl CheckpointWriter {
    /// A writer into `dir`; `keep_older`: earlier checkpoints stay (`keep_checkpoints`).
    pub fn spawn(dir: RunDir, keep_older: bool) -> Result<CheckpointWriter, TrainError> {
        let (jobs, inbox) = bounded::<Snapshot>(1);
        let (report, done) = unbounded();
        let thread = std::thread::Builder::new()
            .name("checkpoint-writer".into())
            .spawn(move || {
                for s in inbox {
                    // A closed `done` means the trainer is gone; nothing is left to tell.
                    let _ = report.send(dir.save_checkpoint(&s, keep_older));
                }
            })
            .map_err(|e| TrainError::Config(format!("cannot start the checkpoint writer: {e}")))?;
        Ok(CheckpointWriter {
            jobs: Some(jobs),
            done,
            pending: 0,
            thread: Some(thread),
        })
    }

    /// Queues `s` for writing; the first error of a checkpoint written since is returned
    /// instead (the snapshot is then dropped: the run stops on it).
    pub fn submit(&mut self, s: Snapshot) -> Result<(), TrainError> {
        while let Ok(r) = self.done.try_recv() {
            self.pending -= 1;
            r?;
        }
        let jobs = self.jobs.as_ref().ok_or(TrainError::CheckpointWriter)?;
        // Both channels stay open while the writer thread runs: a failed send means it
        // is gone, and `wait` below would wait for nothing.
        jobs.send(s).map_err(|_| TrainError::CheckpointWriter)?;
        self.pending += 1;
        Ok(())
    }

    /// Waits until every queued checkpoint is on disk; the first error if one failed.
    pub fn wait(&mut self) -> Result<(), TrainError> {
        let mut first = Ok(());
        while self.pending > 0 {
            let r = self.done.recv().map_err(|_| TrainError::CheckpointWriter);
            self.pending -= 1;
            if first.is_ok() {
                first = r.and_then(|r| r);
            }
        }
        first
    }
}

impl Drop for CheckpointWriter {
    /// A trainer dropped on an error still finishes the checkpoints it queued, so a
    /// resumed run starts from the newest one.
    fn drop(&mut self) {
        let _ = self.wait();
        drop(self.jobs.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
