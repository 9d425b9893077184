//! Checkpoints: every parameter as safetensors, with the config and a checksum of the
//! tensor data in one metadata entry; written atomically, verified on load.

use super::{MuZeroNet, NetError, NetworkConfig, Result};
use binio::BinError;
use candle_core::{Device, Tensor, Var};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// The one metadata entry of a checkpoint. One entry, not several: safetensors writes its
/// metadata map in hash order, and a single key keeps the file bytes reproducible.
const META_KEY: &str = "mallocmuzero-network";
/// Format version of the checkpoint's metadata and tensor naming.
const FORMAT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct CheckpointMeta {
    format_version: u32,
    /// FNV-1a of the tensor names and data, in name order, as 16 hex digits.
    checksum: String,
    config: NetworkConfig,
}

impl MuZeroNet {
    /// The checkpoint bytes: safetensors of every parameter, with the config (JSON) and a
    /// checksum of the tensor data in the metadata.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let tensors: Vec<(String, Tensor)> = self
            .vars
            .iter()
            .map(|(name, v)| Ok((name.clone(), v.as_tensor().to_device(&Device::Cpu)?)))
            .collect::<Result<_>>()?;
        let meta = CheckpointMeta {
            format_version: FORMAT_VERSION,
            checksum: format!("{:016x}", checksum_tensors(&tensors)?),
            config: self.config.clone(),
        };
        let meta = HashMap::from([(
            META_KEY.to_string(),
            serde_json::to_string(&meta)
                .map_err(|e| NetError::Input(format!("cannot encode the config: {e}")))?,
        )]);
        safetensors::tensor::serialize(tensors.iter().map(|(n, t)| (n, t)), Some(meta))
            .map_err(|e| NetError::Input(format!("cannot serialize the weights: {e}")))
    }

    /// Writes the checkpoint atomically (a crash leaves the old file or the new one).
    pub fn save(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        binio::write_bytes_atomic(path, &bytes)?;
        Ok(())
    }

    /// Reads a checkpoint written by [`MuZeroNet::save`] into a network of `config`.
    pub fn load(path: &Path, config: &NetworkConfig, device: &Device) -> Result<MuZeroNet> {
        let bytes = read_file(path)?;
        MuZeroNet::from_bytes(&path.display().to_string(), &bytes, config, device)
    }

    /// The config stored in a checkpoint (to rebuild the network it was saved from).
    pub fn read_config(path: &Path) -> Result<NetworkConfig> {
        let bytes = read_file(path)?;
        let origin = path.display().to_string();
        Ok(parse_checkpoint(&origin, &bytes)?.1.config)
    }

    /// [`MuZeroNet::load`] from bytes; `origin` names them in errors.
    pub fn from_bytes(
        origin: &str,
        bytes: &[u8],
        config: &NetworkConfig,
        device: &Device,
    ) -> Result<MuZeroNet> {
        let err = |msg: String| NetError::Checkpoint {
            path: origin.to_string(),
            msg,
        };
        let (st, _) = parse_checkpoint(origin, bytes)?;
        let net = MuZeroNet::new(config, 0, device)?;
        let known: HashMap<&str, &Var> = net.vars.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let mut stored: Vec<&str> = st.names().into_iter().collect();
        stored.sort_unstable();
        if let Some(extra) = stored.iter().find(|n| !known.contains_key(*n)) {
            return Err(err(format!(
                "checkpoint built with another network shape: it has tensor `{extra}`, \
                 which the config does not"
            )));
        }
        for (name, var) in &net.vars {
            let view = st.tensor(name).map_err(|_| {
                err(format!(
                    "checkpoint built with another network shape: it lacks tensor `{name}`"
                ))
            })?;
            let want = var.as_tensor().dims().to_vec();
            if view.shape() != want.as_slice() {
                return Err(err(format!(
                    "checkpoint built with another network shape: tensor `{name}` is {:?}, \
                     the config needs {want:?}",
                    view.shape()
                )));
            }
            if view.dtype() != safetensors::Dtype::F32 {
                return Err(err(format!(
                    "tensor `{name}` is {:?}, expected F32",
                    view.dtype()
                )));
            }
            let data: Vec<f32> = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            var.set(&Tensor::from_vec(data, want.as_slice(), device)?)?;
        }
        Ok(net)
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        let p = path.display().to_string();
        if e.kind() == std::io::ErrorKind::NotFound {
            NetError::Bin(BinError::Missing { path: p })
        } else {
            NetError::Bin(BinError::Read { path: p, source: e })
        }
    })
}

/// Parses the safetensors header and verifies the format version and the checksum.
fn parse_checkpoint<'a>(
    origin: &str,
    bytes: &'a [u8],
) -> Result<(safetensors::SafeTensors<'a>, CheckpointMeta)> {
    let err = |msg: String| NetError::Checkpoint {
        path: origin.to_string(),
        msg,
    };
    let st = safetensors::SafeTensors::deserialize(bytes).map_err(|e| {
        err(format!(
            "not a network checkpoint (corrupt or truncated): {e}"
        ))
    })?;
    let (_, header) = safetensors::SafeTensors::read_metadata(bytes).map_err(|e| {
        err(format!(
            "not a network checkpoint (corrupt or truncated): {e}"
        ))
    })?;
    let json = header
        .metadata()
        .as_ref()
        .and_then(|m| m.get(META_KEY))
        .ok_or_else(|| {
            err(format!(
                "a safetensors file without the `{META_KEY}` metadata: not written by \
                 MuZeroNet::save"
            ))
        })?;
    let meta: CheckpointMeta =
        serde_json::from_str(json).map_err(|e| err(format!("corrupt checkpoint metadata: {e}")))?;
    if meta.format_version != FORMAT_VERSION {
        return Err(err(format!(
            "checkpoint format version {}, this build reads {FORMAT_VERSION}",
            meta.format_version
        )));
    }
    let mut names: Vec<String> = st.names().into_iter().map(String::from).collect();
    names.sort_unstable();
    let mut hash = binio::Fnv64::new();
    for name in &names {
        let view = st.tensor(name).map_err(|e| err(e.to_string()))?;
        hash.write(name.as_bytes());
        hash.write(view.data());
    }
    let got = format!("{:016x}", hash.finish());
    if meta.checksum != got {
        return Err(err(format!(
            "corrupt checkpoint: tensor data checksum {got}, the header says {}",
            meta.checksum
        )));
    }
    Ok((st, meta))
}

/// FNV-1a over names and little-endian data, in name order: catches flipped bytes that the
/// safetensors header checks (which only see lengths and offsets) let through.
fn checksum_tensors(tensors: &[(String, Tensor)]) -> Result<u64> {
    let mut sorted: Vec<&(String, Tensor)> = tensors.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hash = binio::Fnv64::new();
    for (name, t) in sorted {
        hash.write(name.as_bytes());
        let data = t.flatten_all()?.to_vec1::<f32>()?;
        for x in data {
            hash.write(&x.to_le_bytes());
        }
    }
    Ok(hash.finish())
}
