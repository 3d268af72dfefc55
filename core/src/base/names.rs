//! The string forms of the core's enums: one name per value, `as_str()`, `Display` and
//! `FromStr` (an unknown name is `InvalidArgument` listing the known ones). The faces show and
//! accept exactly these names, so no face invents its own.

/// `names!(Type, "what it is" { Variant => "name", ... })`
macro_rules! names {
    ($ty:ident, $what:literal { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The value's name (what every face shows and accepts).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = crate::base::error::Error;

            fn from_str(name: &str) -> crate::base::error::Result<$ty> {
                match name {
                    $($name => Ok($ty::$variant),)+
                    _ => Err(crate::base::error::Error::invalid(format!(
                        "unknown {} {:?} (known: {})",
                        $what,
                        name.chars().take(64).collect::<String>(),
                        [$($name),+].join(", ")
                    ))),
                }
            }
        }
    };
}

pub(crate) use names;
