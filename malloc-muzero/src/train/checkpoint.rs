//! Checkpoints written beside training. Encoding and writing the two replay buffers took
//! 0.25-0.6 s on resnet50, every `checkpoint_every` iterations, while both cores waited;
//! copying the learner's state takes milliseconds. So the trainer copies it
//! ([`Snapshot::of`]) and a thread of its own writes it while the next iteration runs.
//! `latest.json` is still written last, so a kill leaves the previous checkpoint whole.
//! A checkpoint's files in the run folder are written and read back here
//! ([`RunDir::save_checkpoint`], [`RunDir::load_checkpoint`]).

use super::error::io_error;
use super::learner::Learner;
use super::run_dir::{Latest, RunDir};
use super::TrainError;
use binio::json::write_json;
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use muzero::{device, MuZeroNet, NetworkConfig, OptimConfig, Optimizer, ReplayBuffer};
use std::thread::JoinHandle;

const REPLAY_MAGIC: &[u8; 8] = b"MMZRPLY\0";
// 2: binio files carry a checksum.
const REPLAY_VERSION: u32 = 2;

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

impl RunDir {
    /// Writes checkpoint `s`; `latest.json` last, so a checkpoint counts only once
    /// complete. Then the folders of other checkpoints go, or only those past `s` where
    /// `keep_older` (`keep_checkpoints`).
    pub fn save_checkpoint(&self, s: &Snapshot, keep_older: bool) -> Result<(), TrainError> {
        let here = self.checkpoint(&s.latest.dir);
        binio::create_own_folder(&here).map_err(io_error(&here))?;
        binio::write_bytes_atomic(&here.join("weights.safetensors"), &s.weights)?;
        binio::write_bytes_atomic(&here.join("optimizer.bin"), &s.optimizer)?;
        for (name, buffer) in [("replay.bin", &s.replay), ("demos.bin", &s.demos)] {
            binio::write_atomic(&here.join(name), REPLAY_MAGIC, REPLAY_VERSION, buffer)?;
        }
        // Each folder says which iterations it holds, so a kept one is read on its own.
        write_json(&here.join("checkpoint.json"), &s.latest)?;
        write_json(&self.checkpoints().join("latest.json"), &s.latest)?;
        self.remove_checkpoints_except(Some(&s.latest), keep_older)
    }

    /// The learner's state saved in checkpoint `latest`.
    pub fn load_checkpoint(
        &self,
        latest: &Latest,
        network: &NetworkConfig,
        optim: &OptimConfig,
    ) -> Result<Learner, TrainError> {
        let here = self.checkpoint(&latest.dir);
        let net = MuZeroNet::load(&here.join("weights.safetensors"), network, &device())?;
        let opt = Optimizer::load(&here.join("optimizer.bin"), net.vars(), Some(optim.clone()))?;
        let replay =
            binio::read::<ReplayBuffer>(&here.join("replay.bin"), REPLAY_MAGIC, REPLAY_VERSION)?;
        let demos =
            binio::read::<ReplayBuffer>(&here.join("demos.bin"), REPLAY_MAGIC, REPLAY_VERSION)?;
        Ok(Learner {
            net,
            opt,
            replay,
            demos,
        })
    }
}
