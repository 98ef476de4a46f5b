//! A layer blob as an uncompressed tar stream: the media types accepted, the gzip and zstd
//! decoders, and the hash of the uncompressed bytes (the config's diff_id).

use std::io::{self, BufRead, BufReader, Read};

use sha2::{Digest, Sha256};

/// How a layer's tar stream is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// A plain tar.
    None,
    /// tar+gzip.
    Gzip,
    /// tar+zstd.
    Zstd,
}

/// The compression of a layer media type (OCI and Docker spellings), or `None` when the media
/// type is not a tar layer.
pub fn compression_of(media_type: &str) -> Option<Compression> {
    match media_type {
        "application/vnd.oci.image.layer.v1.tar"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar"
        | "application/vnd.docker.image.rootfs.diff.tar" => Some(Compression::None),
        "application/vnd.oci.image.layer.v1.tar+gzip"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
        | "application/vnd.docker.image.rootfs.diff.tar.gzip"
        | "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" => Some(Compression::Gzip),
        "application/vnd.oci.image.layer.v1.tar+zstd"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd"
        | "application/vnd.docker.image.rootfs.diff.tar.zstd" => Some(Compression::Zstd),
        _ => None,
    }
}

/// The uncompressed stream of `blob`.
pub fn decompress<'a, R: Read + 'a>(blob: R, compression: Compression) -> Box<dyn Read + 'a> {
    let buffered = BufReader::with_capacity(1 << 16, blob);
    match compression {
        Compression::None => Box::new(buffered),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(buffered)),
        Compression::Zstd => Box::new(ZstdFrames::new(buffered)),
    }
}

/// A reader that hashes (SHA-256) and counts what passes through it.
pub struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    /// The bytes read so far.
    pub count: u64,
}

impl<R: Read> Hashing<R> {
    /// Wrap `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            count: 0,
        }
    }

    /// `sha256:<hex>` of everything read.
    pub fn digest(&self) -> String {
        format!("sha256:{}", hex::encode(self.hasher.clone().finalize()))
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
}

/// A reader with a few bytes pushed back in front of it.
struct Unread<R> {
    front: Vec<u8>,
    inner: R,
}

impl<R: Read> Read for Unread<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.front.is_empty() {
            let n = self.front.len().min(buf.len());
            buf[..n].copy_from_slice(&self.front[..n]);
            self.front.drain(..n);
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

const ZSTD_MAGIC: u32 = 0xFD2F_B528;

/// A zstd stream of one or more frames (skippable frames are skipped), decoded in pure Rust.
struct ZstdFrames<R: BufRead> {
    state: Frames<R>,
}

enum Frames<R: BufRead> {
    Between(Unread<R>, Box<ruzstd::decoding::FrameDecoder>),
    In(ruzstd::decoding::StreamingDecoder<Unread<R>, Box<ruzstd::decoding::FrameDecoder>>),
    Done,
}

impl<R: BufRead> ZstdFrames<R> {
    fn new(inner: R) -> Self {
        Self {
            state: Frames::Between(
                Unread {
                    front: Vec::new(),
                    inner,
                },
                Box::new(ruzstd::decoding::FrameDecoder::new()),
            ),
        }
    }
}

/// Read up to `buf.len()` bytes, fewer only at the end of the stream.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

fn bad(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {what}"))
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match std::mem::replace(&mut self.state, Frames::Done) {
                Frames::Done => return Ok(0),
                Frames::In(mut dec) => {
                    let n = dec.read(buf)?;
                    if n > 0 || buf.is_empty() {
                        self.state = Frames::In(dec);
                        return Ok(n);
                    }
                    let (src, decoder) = dec.into_parts();
                    self.state = Frames::Between(src, decoder);
                }
                Frames::Between(mut src, decoder) => {
                    let mut magic = [0u8; 4];
                    match read_full(&mut src, &mut magic)? {
                        0 => return Ok(0),
                        4 => {}
                        _ => return Err(bad("truncated frame header")),
                    }
                    let m = u32::from_le_bytes(magic);
                    if (0x184D_2A50..=0x184D_2A5F).contains(&m) {
                        let mut len = [0u8; 4];
                        if read_full(&mut src, &mut len)? != 4 {
                            return Err(bad("truncated skippable frame"));
                        }
                        let len = u64::from(u32::from_le_bytes(len));
                        let skipped = io::copy(&mut (&mut src).take(len), &mut io::sink())?;
                        if skipped != len {
                            return Err(bad("truncated skippable frame"));
                        }
                        self.state = Frames::Between(src, decoder);
                        continue;
                    }
                    if m != ZSTD_MAGIC {
                        return Err(bad(format!("not a zstd frame (magic {m:#010x})")));
                    }
                    src.front.extend_from_slice(&magic);
                    let dec = ruzstd::decoding::StreamingDecoder::new_with_decoder(src, decoder)
                        .map_err(bad)?;
                    self.state = Frames::In(dec);
                }
            }
        }
    }
}
