//! The trait impls every validated-string type shares: parsed by its `new`,
//! shown as its text, serialized as a string and validated again when
//! deserialized, so that no invalid value ever enters through serde.

/// For `$t(String)` with `fn new(&str) -> Result<$t, $err>`.
macro_rules! string_newtype {
    ($t:ident, $err:ty) => {
        impl ::std::str::FromStr for $t {
            type Err = $err;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::new(s)
            }
        }

        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl ::std::fmt::Debug for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{}({})", stringify!($t), self.0)
            }
        }

        impl ::serde::Serialize for $t {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <String as ::serde::Deserialize>::deserialize(d)?;
                Self::new(&s).map_err(::serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use string_newtype;
