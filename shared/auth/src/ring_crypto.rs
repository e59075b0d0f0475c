//! Token signatures verified by ring, through jsonwebtoken's [`CryptoProvider`] hook.
//!
//! Why: every function already links ring (rustls, for the AWS SDK and the JWKS fetch), and its
//! P-256, P-384, RSA and Ed25519 verification is assembly that stays fast in the size-first
//! release profile, where RustCrypto's ES256 verification cost ~420 µs of CPU per token. Nothing
//! here is cryptography: each verifier hands the key, the signed bytes and the signature to ring.
//! Signing is ring's too: ES256 for the dev issuer, and HMAC (which the verifier's allow-list
//! refuses; tests forge such tokens). jsonwebtoken is built without a crypto backend of its own
//! (no `rust_crypto` feature), so RustCrypto's RSA, P-384 and Ed25519 are not built or linked
//! (its default provider was referenced whatever provider is installed). HMAC verification and the
//! JWK utilities (`Jwk::from_encoding_key`, thumbprints) are not offered: an error, not a panic.
//!
//! Invariant: [`install`] runs before any other use of jsonwebtoken in the process (every entry
//! point of this crate calls it); jsonwebtoken keeps the first provider it sees for good, and
//! without one it panics. ring refuses RSA keys under 2048 bits, which RustCrypto would have
//! accepted.

use std::sync::LazyLock;

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{Error, ErrorKind};
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature::{
    self as ring_signature, EcdsaKeyPair, RsaParameters, RsaPublicKeyComponents, UnparsedPublicKey,
    VerificationAlgorithm,
};
use signature::{Signer, Verifier};

static PROVIDER: LazyLock<CryptoProvider> = LazyLock::new(|| CryptoProvider {
    signer_factory: new_signer,
    verifier_factory: new_verifier,
    key_utils: KeyUtils::new_unimplemented(),
});

/// Makes ring verify every token this process checks (idempotent).
pub fn install() {
    // Err: a provider is installed already — ours, or RustCrypto's if jsonwebtoken ran first,
    // which is still correct, only slower.
    let _ = PROVIDER.install_default();
}

/// True when jsonwebtoken verifies with ring in this process.
pub fn installed() -> bool {
    CryptoProvider::try_get_default().is_some_and(|provider| std::ptr::eq(provider, &*PROVIDER))
}

fn new_verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>, Error> {
    // RSA parameters also check RSA keys ring parses itself (DER).
    let rsa = |parameters: &'static RsaParameters| -> (&'static dyn VerificationAlgorithm, _) {
        (parameters, Some(parameters))
    };
    let (check, rsa_parameters) = match algorithm {
        Algorithm::ES256 => (
            &ring_signature::ECDSA_P256_SHA256_FIXED as &dyn VerificationAlgorithm,
            None,
        ),
        Algorithm::ES384 => (
            &ring_signature::ECDSA_P384_SHA384_FIXED as &dyn VerificationAlgorithm,
            None,
        ),
        Algorithm::EdDSA => (&ring_signature::ED25519 as &dyn VerificationAlgorithm, None),
        Algorithm::RS256 => rsa(&ring_signature::RSA_PKCS1_2048_8192_SHA256),
        Algorithm::RS384 => rsa(&ring_signature::RSA_PKCS1_2048_8192_SHA384),
        Algorithm::RS512 => rsa(&ring_signature::RSA_PKCS1_2048_8192_SHA512),
        Algorithm::PS256 => rsa(&ring_signature::RSA_PSS_2048_8192_SHA256),
        Algorithm::PS384 => rsa(&ring_signature::RSA_PSS_2048_8192_SHA384),
        Algorithm::PS512 => rsa(&ring_signature::RSA_PSS_2048_8192_SHA512),
        // HMAC (refused by the allow-list) and anything newer.
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    if key.family() != algorithm.family() {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    let public_key = match (key.kind(), rsa_parameters) {
        // A JWK's EC point (0x04 ‖ x ‖ y), an OKP's `x`, or a DER key.
        (DecodingKeyKind::SecretOrDer(bytes), _) => PublicKey::Encoded(check, bytes.clone()),
        (DecodingKeyKind::RsaModulusExponent { n, e }, Some(parameters)) => PublicKey::Rsa(
            parameters,
            RsaPublicKeyComponents {
                n: without_leading_zeros(n),
                e: without_leading_zeros(e),
            },
        ),
        (DecodingKeyKind::RsaModulusExponent { .. }, None) => {
            return Err(ErrorKind::InvalidKeyFormat.into());
        }
    };
    Ok(Box::new(RingVerifier {
        algorithm: *algorithm,
        public_key,
    }))
}

fn without_leading_zeros(bytes: &[u8]) -> Vec<u8> {
    let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    bytes[first..].to_vec()
}

/// A signer for `algorithm`: ES256 from a PKCS#8 key (the dev issuer's), HMAC from a secret.
fn new_signer(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>, Error> {
    if key.family() != algorithm.family() {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    let key = match algorithm {
        Algorithm::ES256 => SigningKey::Ecdsa(
            EcdsaKeyPair::from_pkcs8(
                &ring_signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                key.as_bytes(),
                &ring::rand::SystemRandom::new(),
            )
            .map_err(|_| Error::from(ErrorKind::InvalidEcdsaKey))?,
        ),
        Algorithm::HS256 => SigningKey::Hmac(ring::hmac::Key::new(
            ring::hmac::HMAC_SHA256,
            key.as_bytes(),
        )),
        Algorithm::HS384 => SigningKey::Hmac(ring::hmac::Key::new(
            ring::hmac::HMAC_SHA384,
            key.as_bytes(),
        )),
        Algorithm::HS512 => SigningKey::Hmac(ring::hmac::Key::new(
            ring::hmac::HMAC_SHA512,
            key.as_bytes(),
        )),
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    Ok(Box::new(RingSigner {
        algorithm: *algorithm,
        key,
    }))
}

enum SigningKey {
    Ecdsa(EcdsaKeyPair),
    Hmac(ring::hmac::Key),
}

struct RingSigner {
    algorithm: Algorithm,
    key: SigningKey,
}

impl Signer<Vec<u8>> for RingSigner {
    fn try_sign(&self, message: &[u8]) -> Result<Vec<u8>, signature::Error> {
        match &self.key {
            SigningKey::Ecdsa(pair) => pair
                .sign(&ring::rand::SystemRandom::new(), message)
                .map(|signature| signature.as_ref().to_vec())
                .map_err(|_| signature::Error::new()),
            SigningKey::Hmac(key) => Ok(ring::hmac::sign(key, message).as_ref().to_vec()),
        }
    }
}

impl JwtSigner for RingSigner {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

/// A public key and what ring checks its signatures with.
enum PublicKey {
    /// A key ring parses itself: an EC point, an Ed25519 key, an RSA DER key.
    Encoded(&'static dyn VerificationAlgorithm, Vec<u8>),
    /// RSA from a JWK's modulus and exponent.
    Rsa(&'static RsaParameters, RsaPublicKeyComponents<Vec<u8>>),
}

struct RingVerifier {
    algorithm: Algorithm,
    public_key: PublicKey,
}

impl Verifier<Vec<u8>> for RingVerifier {
    fn verify(&self, message: &[u8], signature: &Vec<u8>) -> Result<(), signature::Error> {
        let verified = match &self.public_key {
            PublicKey::Encoded(check, bytes) => {
                UnparsedPublicKey::new(*check, bytes).verify(message, signature)
            }
            PublicKey::Rsa(parameters, components) => {
                components.verify(parameters, message, signature)
            }
        };
        verified.map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair};

    fn verifier(algorithm: Algorithm, key: &DecodingKey) -> Box<dyn JwtVerifier> {
        new_verifier(&algorithm, key).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn es256_and_es384_signatures_verify_and_altered_ones_do_not() {
        let random = SystemRandom::new();
        for (algorithm, signing) in [
            (
                Algorithm::ES256,
                &ring_signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            ),
            (
                Algorithm::ES384,
                &ring_signature::ECDSA_P384_SHA384_FIXED_SIGNING,
            ),
        ] {
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(signing, &random).unwrap();
            let pair = EcdsaKeyPair::from_pkcs8(signing, pkcs8.as_ref(), &random).unwrap();
            let point = pair.public_key().as_ref();
            let half = (point.len() - 1) / 2;
            let key = DecodingKey::from_ec_components(
                &B64.encode(&point[1..=half]),
                &B64.encode(&point[1 + half..]),
            )
            .unwrap();
            let signature = pair
                .sign(&random, b"header.claims")
                .unwrap()
                .as_ref()
                .to_vec();
            let verifier = verifier(algorithm, &key);
            assert!(
                verifier.verify(b"header.claims", &signature).is_ok(),
                "{algorithm:?}"
            );
            assert!(
                verifier.verify(b"header.claimz", &signature).is_err(),
                "{algorithm:?}: other bytes"
            );
            let mut altered = signature.clone();
            altered[7] ^= 1;
            assert!(
                verifier.verify(b"header.claims", &altered).is_err(),
                "{algorithm:?}: altered signature"
            );
        }
    }

    #[test]
    fn eddsa_signatures_verify_and_altered_ones_do_not() {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let key = DecodingKey::from_ed_components(&B64.encode(pair.public_key().as_ref())).unwrap();
        let signature = pair.sign(b"header.claims").as_ref().to_vec();
        let verifier = verifier(Algorithm::EdDSA, &key);
        assert!(verifier.verify(b"header.claims", &signature).is_ok());
        assert!(verifier.verify(b"header.claimz", &signature).is_err());
    }

    // A 2048-bit RSA public key (JWK `n`, `e` = AQAB) and its signatures over `header.claims`,
    // made once with `openssl dgst -sha256 -sign` (PKCS#1 v1.5, and PSS with a 32-byte salt);
    // the private key was discarded.
    const RSA_N: &str = concat!(
        "wIpwQ6RKWroY17ZcyXd3hHizuy4Rv85SScz5gWDWP6my-PsNHmLlRiVnXJCrL0aWpJuBfvAWLKqaKytQurOWDjrH",
        "4PFiYLF98LPw0fN4Xa31CJCbYV5ES6-i3fNZI86HRR1uZ_wC6nGOL77yyEbG8nmJOSppMHy2HBQ802wzqrdAKDDl",
        "9Q-m1bPbpW_qvV8zAX-Tna8oiMZeRx5BLGn3VBsLRK3jFJa-cGstXcA7pUO7si3yijYRikYbhOFYvkdQiS5N0q-5",
        "4-_D4Gx9qJeceyWwakedCkr1JhT4cH1qH9MsnsQlmJzW0XZM-AjQvHnEQ7lW-bYi82qWGOSqRyMSUQ",
    );
    const RS256_SIGNATURE: &str = concat!(
        "gHv_CUDuoDyLzYP4bCxl14wJLbvxC0aFgxkPs98wguOVf-JWLTpk2TgE3IilVSRGhrY8cvnEYYQfxYDHFpG6pG1f",
        "R4JTmfyIrpT-pBB5Q70za3hQ3OqpZ5XgQd4l92Rvbp_Xh3Ue8FsqymI5QPji3_cgHZVOj_DobC4AksVoHOZeZt4c",
        "Fh1oNwt6Vbtmqo5HyC41XfpwpdL9EXrigFUWcpZ1xPJ538qR88T9VT8S57yDLEoQyOOeiRmBSzXe4NdNkeS1Y_Cr",
        "QUrp8jAWKNqceNSgDJCKjgn5n-qSO1iOItOfhMkpU5xPc1g-uyvw4PHqgS7vIz2hnUlNzdXCZuydEA",
    );
    const PS256_SIGNATURE: &str = concat!(
        "XiLGNvUtTiv0vXR8Il6XBwDmqI6ILMmda8XwhiTxASqzvz3Ta13E7ZCma1nqzBY6nWOv6lcUiUYv5PVAenFKNrij",
        "syePcBYnhNr3t36XJowT7WOXlDU-AMIW5WpI9C8gATF6KXGmmnVjzwQAne4aOV0h0wpULUpO8OXQa61zLNTwQQ1r",
        "GnnnNtCRCUTeb-Hy0gpAe4JZ-Du6Ex5ZG2jw6SrgmCfv8klKCvgm2_KZsvBkwm3-DTUALjMasHxCn4BYTNf9Gc91",
        "htXYH2SAJT2zJyS3aCE88kJZ1M0aAhLmxjnhHYN3LMybtqN63yoEdRoBnhjEt-GpDh2pDpwelHtCqA",
    );

    #[test]
    fn rs256_and_ps256_signatures_verify_and_altered_ones_do_not() {
        let key = DecodingKey::from_rsa_components(RSA_N, "AQAB").unwrap();
        let decode = |signature: &str| B64.decode(signature).unwrap();
        for (algorithm, signature) in [
            (Algorithm::RS256, RS256_SIGNATURE),
            (Algorithm::PS256, PS256_SIGNATURE),
        ] {
            let verifier = verifier(algorithm, &key);
            assert!(
                verifier
                    .verify(b"header.claims", &decode(signature))
                    .is_ok(),
                "{algorithm:?}"
            );
            assert!(
                verifier
                    .verify(b"header.claimz", &decode(signature))
                    .is_err(),
                "{algorithm:?}: other bytes"
            );
            let mut altered = decode(signature);
            altered[7] ^= 1;
            assert!(
                verifier.verify(b"header.claims", &altered).is_err(),
                "{algorithm:?}: altered signature"
            );
        }
        let pkcs1 = verifier(Algorithm::RS256, &key);
        assert!(
            pkcs1
                .verify(b"header.claims", &decode(PS256_SIGNATURE))
                .is_err(),
            "a PSS signature is not PKCS#1"
        );
    }

    #[test]
    fn a_key_of_another_family_is_refused() {
        let ec = DecodingKey::from_ec_components(&B64.encode([1u8; 32]), &B64.encode([2u8; 32]))
            .unwrap();
        assert!(new_verifier(&Algorithm::RS256, &ec).is_err());
        let rsa = DecodingKey::from_rsa_raw_components(&[0xc5; 256], &[1, 0, 1]);
        assert!(new_verifier(&Algorithm::ES256, &rsa).is_err());
        assert!(
            verifier(Algorithm::RS256, &rsa)
                .verify(b"m", &vec![0; 256])
                .is_err(),
            "a bogus RSA signature"
        );
    }

    #[test]
    fn installing_makes_ring_the_process_provider() {
        install();
        assert!(installed());
    }
}
