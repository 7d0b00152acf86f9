//! Encryption at rest, as kube-apiserver's `--encryption-provider-config` does it: an
//! [`EncryptedStore`] decorator that encrypts the values of the keys a [`Resolve`] names with
//! their [`Transformer`] on every write and decrypts them on every read, list, delete and watch
//! event, so that the engine (SQLite's file, etcd) holds only ciphertext for those resources.
//!
//! Stored values carry upstream's envelope, `k8s:enc:<provider>:v1:<key name>:` followed by
//! the provider's output, so data moves between this server and kube-apiserver on one etcd:
//! - `aescbc`: a random 16-byte IV, then AES-CBC of the PKCS#7-padded value;
//! - `aesgcm`: a random 12-byte nonce, then AES-GCM sealed with the storage key as
//!   authenticated data (a value copied to another key does not decrypt);
//! - `secretbox`: a random 24-byte nonce, then `NaCl`'s XSalsa20-Poly1305 box.
//!
//! `identity` writes plain values and reads any value without the `k8s:enc:` prefix. The first
//! provider writes; a read tries every provider whose prefix the value has, in order, so that
//! keys can be rotated by listing the new key first and rewriting the objects.
//!
//! Architecture Invariant: a value of a key whose resource is configured for encryption never
//! reaches the engine unencrypted unless `identity` is the first provider; a value that no
//! provider can read is never returned decrypted: it goes up as stored (enveloped ciphertext),
//! which readers refuse, and plain data where no `identity` provider reads it is an error.

use std::sync::Arc;

use aes_gcm::aead::{Aead, KeyInit, Payload};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use rand::RngCore;

use crate::{
    Event, Freshness, KeyValue, ListRequest, ListResponse, Revision, StorageError, Store,
    WatchRequest, WatchStream,
};

/// Every encrypted value starts with this.
const ENVELOPE: &[u8] = b"k8s:enc:";

/// What marks plain data that no provider of its resource reads, on its way up to the reader.
const UNENCRYPTED: &[u8] = b"k8s:enc:unencrypted:";

/// Why a value an [`EncryptedStore`] passed up cannot be read, when it is one it could not
/// read: `None` for anything else (plain data it read, or a key it does not encrypt). Readers
/// answer it as the object's 500, so one unreadable value fails its own reads, not every list
/// and watch that covers it.
pub fn unreadable(value: &[u8]) -> Option<String> {
    if value.starts_with(UNENCRYPTED) {
        return Some(
            "it is stored unencrypted, and no identity provider of the encryption configuration reads unencrypted data"
                .into(),
        );
    }
    if !value.starts_with(ENVELOPE) {
        return None;
    }
    // `k8s:enc:<provider>:v1:<key name>:`
    let written_with: String = value
        .split_inclusive(|b| *b == b':')
        .take(5)
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect();
    Some(format!(
        "no configured encryption key reads it (written with {written_with})"
    ))
}

/// A provider's keys: names and key material, the first one encrypting.
pub type NamedKeys = Vec<(String, Vec<u8>)>;

/// One provider of a resource's list.
#[derive(Clone)]
pub enum Provider {
    /// Plain values (`identity: {}`).
    Identity,
    /// `aescbc` with named 16, 24 or 32-byte keys; the first encrypts.
    AesCbc(NamedKeys),
    /// `aesgcm` with named 16, 24 or 32-byte keys; the first encrypts.
    AesGcm(NamedKeys),
    /// `secretbox` with named 32-byte keys; the first encrypts.
    Secretbox(NamedKeys),
}

impl std::fmt::Debug for Provider {
    /// Names and key names only: key material is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names =
            |keys: &[(String, Vec<u8>)]| keys.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        match self {
            Provider::Identity => write!(f, "identity"),
            Provider::AesCbc(k) => write!(f, "aescbc{:?}", names(k)),
            Provider::AesGcm(k) => write!(f, "aesgcm{:?}", names(k)),
            Provider::Secretbox(k) => write!(f, "secretbox{:?}", names(k)),
        }
    }
}

impl Provider {
    /// Its name in the envelope.
    fn name(&self) -> &'static str {
        match self {
            Provider::Identity => "identity",
            Provider::AesCbc(_) => "aescbc",
            Provider::AesGcm(_) => "aesgcm",
            Provider::Secretbox(_) => "secretbox",
        }
    }

    fn keys(&self) -> &[(String, Vec<u8>)] {
        match self {
            Provider::Identity => &[],
            Provider::AesCbc(k) | Provider::AesGcm(k) | Provider::Secretbox(k) => k,
        }
    }
}

/// The providers of one resource, in the configuration's order.
#[derive(Clone, Debug)]
pub struct Transformer {
    providers: Vec<Provider>,
}

/// Why a value could not be encrypted or decrypted (an internal error to clients).
fn failure(message: impl std::fmt::Display) -> StorageError {
    StorageError::Engine(message.to_string())
}

impl Transformer {
    /// The providers of a resource; the first one writes. `None` without any.
    pub fn new(providers: Vec<Provider>) -> Option<Self> {
        (!providers.is_empty()).then_some(Transformer { providers })
    }

    /// The value to store for `plain` at `key`.
    pub fn to_storage(&self, key: &str, plain: &[u8]) -> Result<Bytes, StorageError> {
        let provider = &self.providers[0];
        let Some((name, secret)) = provider.keys().first() else {
            return Ok(Bytes::copy_from_slice(plain));
        };
        let mut out = format!("k8s:enc:{}:v1:{name}:", provider.name()).into_bytes();
        match provider {
            Provider::Identity => unreachable!("identity has no keys"),
            Provider::AesCbc(_) => aes_cbc_seal(secret, plain, &mut out)?,
            Provider::AesGcm(_) => {
                let mut nonce = [0u8; 12];
                rand::rng().fill_bytes(&mut nonce);
                aes_gcm_seal(secret, &nonce, key.as_bytes(), plain, &mut out)?;
            }
            Provider::Secretbox(_) => secretbox_seal(secret, plain, &mut out)?,
        }
        Ok(Bytes::from(out))
    }

    /// The plain value of `stored` at `key`: the first provider whose prefix it has decrypts it
    /// (`identity` takes a value without the envelope).
    pub fn from_storage(&self, key: &str, stored: &Bytes) -> Result<Bytes, StorageError> {
        self.read(key, stored).map(|(plain, _)| plain)
    }

    /// [`Transformer::from_storage`], and whether the value is stale: read by another provider
    /// or key than the one writes use, so a write must replace it even if nothing changed.
    pub fn read(&self, key: &str, stored: &Bytes) -> Result<(Bytes, bool), StorageError> {
        let enveloped = stored.starts_with(ENVELOPE);
        let mut last = None;
        for (p, provider) in self.providers.iter().enumerate() {
            if let Provider::Identity = provider {
                if !enveloped {
                    return Ok((stored.clone(), p > 0));
                }
                continue;
            }
            for (k, (name, secret)) in provider.keys().iter().enumerate() {
                let prefix = format!("k8s:enc:{}:v1:{name}:", provider.name());
                let Some(body) = stored.strip_prefix(prefix.as_bytes()) else {
                    continue;
                };
                let opened = match provider {
                    Provider::Identity => unreachable!("identity has no keys"),
                    Provider::AesCbc(_) => aes_cbc_open(secret, body),
                    Provider::AesGcm(_) => aes_gcm_open(secret, key.as_bytes(), body),
                    Provider::Secretbox(_) => secretbox_open(secret, body),
                };
                match opened {
                    Ok(plain) => return Ok((Bytes::from(plain), p > 0 || k > 0)),
                    Err(e) => last = Some(e),
                }
            }
        }
        Err(last.unwrap_or_else(|| {
            if enveloped {
                failure("no matching prefix found")
            } else {
                failure("identity transformer is not configured to read unencrypted data")
            }
        }))
    }
}

type Aes128CbcEnc = cbc::Encryptor<aes::Aes128>;
type Aes192CbcEnc = cbc::Encryptor<aes::Aes192>;
type Aes256CbcEnc = cbc::Encryptor<aes::Aes256>;
type Aes128CbcDec = cbc::Decryptor<aes::Aes128>;
type Aes192CbcDec = cbc::Decryptor<aes::Aes192>;
type Aes256CbcDec = cbc::Decryptor<aes::Aes256>;

/// AES-CBC with a random IV, PKCS#7 padding, as upstream's `aes.NewCBCTransformer`.
fn aes_cbc_seal(secret: &[u8], plain: &[u8], out: &mut Vec<u8>) -> Result<(), StorageError> {
    let mut iv = [0u8; 16];
    rand::rng().fill_bytes(&mut iv);
    aes_cbc_seal_with(secret, &iv, plain, out)
}

/// AES-CBC of `plain` with `iv`, appended to `out` after the IV.
fn aes_cbc_seal_with(
    secret: &[u8],
    iv: &[u8; 16],
    plain: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), StorageError> {
    use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
    out.extend_from_slice(iv);
    let sealed = match secret.len() {
        16 => Aes128CbcEnc::new_from_slices(secret, iv)
            .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>(plain)),
        24 => Aes192CbcEnc::new_from_slices(secret, iv)
            .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>(plain)),
        _ => Aes256CbcEnc::new_from_slices(secret, iv)
            .map(|c| c.encrypt_padded_vec_mut::<Pkcs7>(plain)),
    }
    .map_err(failure)?;
    out.extend_from_slice(&sealed);
    Ok(())
}

fn aes_cbc_open(secret: &[u8], body: &[u8]) -> Result<Vec<u8>, StorageError> {
    use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::Pkcs7};
    if body.len() < 16 {
        return Err(failure(
            "the stored data was shorter than the required size",
        ));
    }
    let (iv, data) = body.split_at(16);
    if data.len() % 16 != 0 {
        return Err(failure(
            "the stored data is not a multiple of the block size",
        ));
    }
    let invalid = |_| failure("invalid PKCS7 data (empty or not padded)");
    match secret.len() {
        16 => Aes128CbcDec::new_from_slices(secret, iv)
            .map_err(failure)?
            .decrypt_padded_vec_mut::<Pkcs7>(data)
            .map_err(invalid),
        24 => Aes192CbcDec::new_from_slices(secret, iv)
            .map_err(failure)?
            .decrypt_padded_vec_mut::<Pkcs7>(data)
            .map_err(invalid),
        _ => Aes256CbcDec::new_from_slices(secret, iv)
            .map_err(failure)?
            .decrypt_padded_vec_mut::<Pkcs7>(data)
            .map_err(invalid),
    }
}

type Aes192Gcm = aes_gcm::AesGcm<aes::Aes192, aes_gcm::aead::consts::U12>;

/// AES-GCM of `plain` with `nonce` and the storage key as authenticated data, appended to
/// `out` after the nonce (upstream's `aes.NewGCMTransformer`).
fn aes_gcm_seal(
    secret: &[u8],
    nonce: &[u8; 12],
    aad: &[u8],
    plain: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), StorageError> {
    let payload = Payload { msg: plain, aad };
    let nonce_ref = aes_gcm::Nonce::from_slice(nonce);
    let sealed = match secret.len() {
        16 => aes_gcm::Aes128Gcm::new_from_slice(secret)
            .map_err(failure)?
            .encrypt(nonce_ref, payload),
        24 => Aes192Gcm::new_from_slice(secret)
            .map_err(failure)?
            .encrypt(nonce_ref, payload),
        _ => aes_gcm::Aes256Gcm::new_from_slice(secret)
            .map_err(failure)?
            .encrypt(nonce_ref, payload),
    }
    .map_err(|_| failure("aes-gcm encryption failed"))?;
    out.extend_from_slice(nonce);
    out.extend_from_slice(&sealed);
    Ok(())
}

fn aes_gcm_open(secret: &[u8], aad: &[u8], body: &[u8]) -> Result<Vec<u8>, StorageError> {
    if body.len() < 12 {
        return Err(failure(
            "the stored data was shorter than the required size",
        ));
    }
    let (nonce, data) = body.split_at(12);
    let nonce = aes_gcm::Nonce::from_slice(nonce);
    let payload = Payload { msg: data, aad };
    match secret.len() {
        16 => aes_gcm::Aes128Gcm::new_from_slice(secret)
            .map_err(failure)?
            .decrypt(nonce, payload),
        24 => Aes192Gcm::new_from_slice(secret)
            .map_err(failure)?
            .decrypt(nonce, payload),
        _ => aes_gcm::Aes256Gcm::new_from_slice(secret)
            .map_err(failure)?
            .decrypt(nonce, payload),
    }
    .map_err(|_| failure("cipher: message authentication failed"))
}

/// `NaCl`'s secretbox with a random 24-byte nonce (upstream's `secretbox.NewSecretboxTransformer`).
fn secretbox_seal(secret: &[u8], plain: &[u8], out: &mut Vec<u8>) -> Result<(), StorageError> {
    use crypto_secretbox::XSalsa20Poly1305;
    let cipher = XSalsa20Poly1305::new_from_slice(secret).map_err(failure)?;
    let mut nonce = [0u8; 24];
    rand::rng().fill_bytes(&mut nonce);
    let sealed = cipher
        .encrypt(crypto_secretbox::Nonce::from_slice(&nonce), plain)
        .map_err(|_| failure("secretbox encryption failed"))?;
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    Ok(())
}

fn secretbox_open(secret: &[u8], body: &[u8]) -> Result<Vec<u8>, StorageError> {
    use crypto_secretbox::XSalsa20Poly1305;
    if body.len() < 24 {
        return Err(failure(
            "the stored data was shorter than the required size",
        ));
    }
    let (nonce, data) = body.split_at(24);
    XSalsa20Poly1305::new_from_slice(secret)
        .map_err(failure)?
        .decrypt(crypto_secretbox::Nonce::from_slice(nonce), data)
        .map_err(|_| failure("output array was not large enough for encryption"))
}

/// Which transformer, if any, a storage key's values go through.
pub type Resolve = Arc<dyn Fn(&str) -> Option<Arc<Transformer>> + Send + Sync>;

/// A store whose configured keys hold encrypted values (see the module docs).
pub struct EncryptedStore {
    inner: Arc<dyn Store>,
    keys: Keys,
}

/// The resolver and what it has seen: the keys last read stale, at their revisions (until
/// they are written again), for [`Store::stale`].
#[derive(Clone)]
struct Keys {
    resolve: Resolve,
    stale: Arc<std::sync::Mutex<std::collections::HashMap<String, Revision>>>,
}

impl EncryptedStore {
    /// Encrypts what `resolve` names, over `inner`.
    pub fn new(inner: Arc<dyn Store>, resolve: Resolve) -> Self {
        EncryptedStore {
            inner,
            keys: Keys {
                resolve,
                stale: Arc::default(),
            },
        }
    }
}

impl Keys {
    fn stale_set(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Revision>> {
        self.stale
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `kv` with its value decrypted, when its key is encrypted, noting whether it is stale.
    /// A value no provider reads is passed up still enveloped (see [`unreadable`]), so that one
    /// such value fails its own reads, not every list and watch that covers it.
    fn open(&self, mut kv: KeyValue) -> KeyValue {
        if let Some(t) = (self.resolve)(&kv.key) {
            let (plain, stale) = match t.read(&kv.key, &kv.value) {
                Ok(read) => read,
                Err(e) => {
                    tracing::error!(key = %kv.key, error = %e, "a stored value cannot be read with the configured providers");
                    if !kv.value.starts_with(ENVELOPE) {
                        // Plain data where no `identity` provider reads it: marked, so that its
                        // reader refuses it too (as upstream refuses it) instead of taking it.
                        let mut marked = UNENCRYPTED.to_vec();
                        marked.extend_from_slice(&kv.value);
                        kv.value = Bytes::from(marked);
                    }
                    return kv;
                }
            };
            kv.value = plain;
            let mut set = self.stale_set();
            if stale {
                set.insert(kv.key.clone(), kv.mod_revision);
            } else if set.get(&kv.key).is_some_and(|r| *r <= kv.mod_revision) {
                set.remove(&kv.key);
            }
        }
        kv
    }

    /// A write replaced or removed the key's value.
    fn written(&self, key: &str) {
        self.stale_set().remove(key);
    }
}

/// A write's failure with the state it carries decrypted (a create's existing value, an
/// update's current one), as callers read them.
fn open_error(keys: &Keys, e: StorageError) -> StorageError {
    match e {
        StorageError::AlreadyExists { key, existing } => StorageError::AlreadyExists {
            key,
            existing: keys.open(existing),
        },
        StorageError::Conflict {
            key,
            expected,
            current,
        } => StorageError::Conflict {
            key,
            expected,
            current: keys.open(current),
        },
        other => other,
    }
}

fn open_event(keys: &Keys, event: Event) -> Event {
    match event {
        Event::Put { kv, prev } => Event::Put {
            prev: prev.map(|p| keys.open(p)),
            kv: keys.open(kv),
        },
        Event::Delete { prev, revision } => {
            let prev = keys.open(prev);
            keys.written(&prev.key);
            Event::Delete { prev, revision }
        }
        other @ Event::Progress { .. } => other,
    }
}

#[async_trait]
impl Store for EncryptedStore {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        Ok(self.inner.get(key).await?.map(|kv| self.keys.open(kv)))
    }

    async fn get_with(
        &self,
        key: &str,
        freshness: Freshness,
    ) -> Result<Option<KeyValue>, StorageError> {
        Ok(self
            .inner
            .get_with(key, freshness)
            .await?
            .map(|kv| self.keys.open(kv)))
    }

    async fn list(&self, request: ListRequest) -> Result<ListResponse, StorageError> {
        let mut resp = self.inner.list(request).await?;
        resp.items = resp
            .items
            .into_iter()
            .map(|kv| self.keys.open(kv))
            .collect();
        Ok(resp)
    }

    async fn count(&self, prefix: &str) -> Result<u64, StorageError> {
        self.inner.count(prefix).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StorageError> {
        match (self.keys.resolve)(key) {
            Some(t) => self.inner.create(key, t.to_storage(key, &value)?).await,
            None => self.inner.create(key, value).await,
        }
        .map_err(|e| open_error(&self.keys, e))
    }

    async fn create_decoded(
        &self,
        key: &str,
        value: Bytes,
        decoding: &(dyn Fn() -> crate::Decoded + Send + Sync),
    ) -> Result<Revision, StorageError> {
        match (self.keys.resolve)(key) {
            Some(t) => self.inner.create(key, t.to_storage(key, &value)?).await,
            None => self.inner.create_decoded(key, value, decoding).await,
        }
        .map_err(|e| open_error(&self.keys, e))
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StorageError> {
        let value = match (self.keys.resolve)(key) {
            Some(t) => t.to_storage(key, &value)?,
            None => value,
        };
        let rev = self
            .inner
            .update(key, value, expected)
            .await
            .map_err(|e| open_error(&self.keys, e))?;
        self.keys.written(key);
        Ok(rev)
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(KeyValue, Revision), StorageError> {
        let (kv, revision) = self
            .inner
            .delete(key, expected)
            .await
            .map_err(|e| open_error(&self.keys, e))?;
        self.keys.written(key);
        Ok((self.keys.open(kv), revision))
    }

    async fn watch(&self, request: WatchRequest) -> Result<WatchStream, StorageError> {
        let keys = self.keys.clone();
        let stream = self.inner.watch(request).await?;
        Ok(Box::pin(
            stream.map(move |event| event.map(|e| open_event(&keys, e))),
        ))
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    fn local_revision(&self) -> Option<Revision> {
        self.inner.local_revision()
    }

    fn stale(&self, key: &str, revision: Revision) -> bool {
        self.keys.stale_set().get(key) == Some(&revision) || self.inner.stale(key, revision)
    }

    fn events_carry_written_values(&self) -> bool {
        // The keys it does not encrypt pass the engine's buffers through unchanged.
        self.inner.events_carry_written_values()
    }

    async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        self.inner.compact(revision).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<(String, Vec<u8>)> {
        vec![(
            "key1".into(),
            (0..n).map(|i| u8::try_from(i).unwrap()).collect(),
        )]
    }

    /// Every provider and key size round-trips, with upstream's envelope, and refuses what it
    /// cannot open.
    #[test]
    fn values_round_trip_under_each_provider_with_upstreams_envelope() {
        let cases = [
            (Provider::AesCbc(keys(16)), "k8s:enc:aescbc:v1:key1:"),
            (Provider::AesCbc(keys(24)), "k8s:enc:aescbc:v1:key1:"),
            (Provider::AesCbc(keys(32)), "k8s:enc:aescbc:v1:key1:"),
            (Provider::AesGcm(keys(16)), "k8s:enc:aesgcm:v1:key1:"),
            (Provider::AesGcm(keys(24)), "k8s:enc:aesgcm:v1:key1:"),
            (Provider::AesGcm(keys(32)), "k8s:enc:aesgcm:v1:key1:"),
            (Provider::Secretbox(keys(32)), "k8s:enc:secretbox:v1:key1:"),
        ];
        let key = "/registry/secrets/default/s";
        let plain = br#"{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}"#;
        for (provider, prefix) in cases {
            let what = format!("{provider:?} {}", provider.keys()[0].1.len());
            let t = Transformer::new(vec![provider]).unwrap();
            let stored = t.to_storage(key, plain).unwrap();
            assert!(stored.starts_with(prefix.as_bytes()), "{what}");
            assert!(
                !stored.windows(6).any(|w| w == b"aHVudG"),
                "{what}: plaintext stored"
            );
            // A fresh IV or nonce each time.
            assert_ne!(stored, t.to_storage(key, plain).unwrap(), "{what}");
            assert_eq!(&t.from_storage(key, &stored).unwrap()[..], plain, "{what}");
            // A flipped byte does not decrypt (CBC: the padding check, or garbage is refused
            // by authenticated modes).
            let mut bad = stored.to_vec();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            let bad = Bytes::from(bad);
            match t.from_storage(key, &bad) {
                Err(_) => {}
                Ok(v) => assert_ne!(&v[..], plain, "{what}: tampering unnoticed"),
            }
            // Plain data is refused without `identity`.
            assert_eq!(
                t.from_storage(key, &Bytes::from_static(plain))
                    .unwrap_err()
                    .to_string(),
                failure("identity transformer is not configured to read unencrypted data")
                    .to_string(),
                "{what}"
            );
        }
    }

    /// Known answers from independent implementations (`openssl enc -aes-256-cbc -K 0001..1f
    /// -iv 0f0e..00`, Python `cryptography`'s `AESGCM` with the key as associated data), so the
    /// bytes are what kube-apiserver's Go transformers read.
    #[test]
    fn ciphertexts_match_independent_implementations() {
        let secret: Vec<u8> = (0..32).collect();
        let hex = |b: &[u8]| {
            use std::fmt::Write as _;
            b.iter().fold(String::new(), |mut out, x| {
                let _ = write!(out, "{x:02x}");
                out
            })
        };
        let iv: [u8; 16] = std::array::from_fn(|i| u8::try_from(15 - i).unwrap());
        let mut out = Vec::new();
        aes_cbc_seal_with(&secret, &iv, b"hello secret", &mut out).unwrap();
        assert_eq!(hex(&out[16..]), "ecb44855a2e89d737ae0e6be14207276");
        assert_eq!(aes_cbc_open(&secret, &out).unwrap(), b"hello secret");
        let nonce: [u8; 12] = std::array::from_fn(|i| u8::try_from(i).unwrap());
        let aad = b"/registry/secrets/default/s";
        let mut out = Vec::new();
        aes_gcm_seal(&secret, &nonce, aad, b"hello secret", &mut out).unwrap();
        assert_eq!(
            hex(&out[12..]),
            "2f67ba77aac5b17eee33f2ff539f439158fdf2cb123fa22117bbea1d"
        );
        assert_eq!(aes_gcm_open(&secret, aad, &out).unwrap(), b"hello secret");
    }

    #[test]
    fn aes_gcm_binds_the_value_to_its_key() {
        let t = Transformer::new(vec![Provider::AesGcm(keys(32))]).unwrap();
        let stored = t.to_storage("/registry/secrets/a/one", b"v").unwrap();
        assert_eq!(
            t.from_storage("/registry/secrets/a/two", &stored)
                .unwrap_err()
                .to_string(),
            failure("cipher: message authentication failed").to_string()
        );
    }

    /// The first provider writes; reads try each provider, so keys rotate and encryption can
    /// be turned on (identity last) or off (identity first) over existing data.
    #[test]
    fn the_first_provider_writes_and_every_provider_reads() {
        let key = "/registry/secrets/default/s";
        let old =
            Transformer::new(vec![Provider::AesCbc(vec![("old".into(), vec![7; 32])])]).unwrap();
        let written_old = old.to_storage(key, b"old value").unwrap();
        let rotated = Transformer::new(vec![
            Provider::Secretbox(vec![("new".into(), vec![9; 32])]),
            Provider::AesCbc(vec![("old".into(), vec![7; 32])]),
            Provider::Identity,
        ])
        .unwrap();
        let written_new = rotated.to_storage(key, b"new value").unwrap();
        assert!(written_new.starts_with(b"k8s:enc:secretbox:v1:new:"));
        assert_eq!(
            &rotated.from_storage(key, &written_old).unwrap()[..],
            b"old value"
        );
        assert_eq!(
            &rotated.from_storage(key, &written_new).unwrap()[..],
            b"new value"
        );
        assert_eq!(
            &rotated
                .from_storage(key, &Bytes::from_static(b"{}"))
                .unwrap()[..],
            b"{}"
        );
        // Decryption turned off: identity writes, the old key still reads.
        let off = Transformer::new(vec![
            Provider::Identity,
            Provider::AesCbc(vec![("old".into(), vec![7; 32])]),
        ])
        .unwrap();
        assert_eq!(&off.to_storage(key, b"plain").unwrap()[..], b"plain");
        assert_eq!(
            &off.from_storage(key, &written_old).unwrap()[..],
            b"old value"
        );
        // A key no provider knows.
        assert_eq!(
            off.from_storage(key, &written_new).unwrap_err().to_string(),
            failure("no matching prefix found").to_string()
        );
    }

    /// A value read with an old key (or unencrypted where writes now encrypt) is stale until it
    /// is written again: what lets a no-op update rotate it.
    #[tokio::test]
    async fn values_read_with_an_old_key_are_stale_until_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let engine: Arc<dyn Store> =
            crate::sqlite::SqliteStore::open(&dir.path().join("db")).unwrap();
        let with = |providers: Vec<Provider>| {
            let t = Arc::new(Transformer::new(providers).unwrap());
            let resolve: Resolve = Arc::new(move |_| Some(t.clone()));
            EncryptedStore::new(engine.clone(), resolve)
        };
        let old = || Provider::AesCbc(vec![("old".into(), vec![1; 32])]);
        let new = || Provider::AesGcm(vec![("new".into(), vec![2; 32])]);
        let before = with(vec![old()]);
        let rev = before
            .create("/k/a", Bytes::from_static(b"v"))
            .await
            .unwrap();
        engine
            .create("/k/plain", Bytes::from_static(b"p"))
            .await
            .unwrap();
        assert!(!before.stale("/k/a", rev));
        let after = with(vec![new(), old(), Provider::Identity]);
        let kv = after.get("/k/a").await.unwrap().unwrap();
        assert_eq!(&kv.value[..], b"v");
        assert!(after.stale("/k/a", rev));
        assert!(!after.stale("/k/a", rev + 100), "only at the revision read");
        let listed = after
            .list(ListRequest {
                prefix: "/k/".into(),
                ..ListRequest::default()
            })
            .await
            .unwrap();
        let plain_rev = listed.items[1].mod_revision;
        assert!(
            after.stale("/k/plain", plain_rev),
            "unencrypted where writes encrypt"
        );
        let rev2 = after.update("/k/a", kv.value, rev).await.unwrap();
        assert!(!after.stale("/k/a", rev2));
        assert!(after.get("/k/a").await.is_ok());
        assert!(!after.stale("/k/a", rev2), "read back with the new key");
        let raw = engine.get("/k/a").await.unwrap().unwrap();
        assert!(raw.value.starts_with(b"k8s:enc:aesgcm:v1:new:"));
    }

    /// What no provider reads goes up still enveloped, and says why; the store's other values
    /// are read as usual.
    #[tokio::test]
    async fn unreadable_values_go_up_marked_and_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let engine: Arc<dyn Store> =
            crate::sqlite::SqliteStore::open(&dir.path().join("db")).unwrap();
        let writer = Transformer::new(vec![Provider::Secretbox(vec![(
            "gone".into(),
            vec![3; 32],
        )])])
        .unwrap();
        let sealed = writer.to_storage("/k/sealed", b"v").unwrap();
        engine.create("/k/sealed", sealed).await.unwrap();
        engine
            .create("/k/plain", Bytes::from_static(b"{}"))
            .await
            .unwrap();
        let t = Arc::new(Transformer::new(vec![Provider::AesGcm(keys(32))]).unwrap());
        let resolve: Resolve = Arc::new(move |_| Some(t.clone()));
        let store = EncryptedStore::new(engine, resolve);
        store
            .create("/k/good", Bytes::from_static(b"fine"))
            .await
            .unwrap();
        let list = store
            .list(ListRequest {
                prefix: "/k/".into(),
                ..ListRequest::default()
            })
            .await
            .unwrap();
        let why: Vec<(String, Option<String>)> = list
            .items
            .iter()
            .map(|kv| (kv.key.clone(), unreadable(&kv.value)))
            .collect();
        assert_eq!(
            why,
            [
                ("/k/good".to_string(), None),
                (
                    "/k/plain".to_string(),
                    Some("it is stored unencrypted, and no identity provider of the encryption configuration reads unencrypted data".into())
                ),
                (
                    "/k/sealed".to_string(),
                    Some("no configured encryption key reads it (written with k8s:enc:secretbox:v1:gone:)".into())
                ),
            ]
        );
        assert_eq!(&list.items[0].value[..], b"fine");
    }

    /// An `EncryptedStore` that encrypts every key passes the storage conformance suite: it
    /// is transparent to every caller.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_encrypted_store_passes_the_conformance_suite() {
        let dir = tempfile::tempdir().unwrap();
        let engine: Arc<dyn Store> =
            crate::sqlite::SqliteStore::open(&dir.path().join("db")).unwrap();
        let t = Arc::new(Transformer::new(vec![Provider::AesGcm(keys(32))]).unwrap());
        let resolve: Resolve = Arc::new(move |_| Some(t.clone()));
        let store: Arc<dyn Store> = Arc::new(EncryptedStore::new(engine.clone(), resolve));
        crate::conformance::run_all(store.clone()).await;
        // And the engine holds only ciphertext.
        store
            .create("/registry/secrets/x/y", Bytes::from_static(b"hunter2"))
            .await
            .unwrap();
        let raw = engine.get("/registry/secrets/x/y").await.unwrap().unwrap();
        assert!(raw.value.starts_with(b"k8s:enc:aesgcm:v1:key1:"));
        assert!(!raw.value.windows(7).any(|w| w == b"hunter2"));
    }
}
