//! The plain keys — each one value (a string, a number, a switch, a list) — are declared once, in
//! a table of lines `"path" => field: Type = read, apply;` (see `config.rs`): the line gives the
//! layer its field, the reader its arm (`read` checks the value and reports what is wrong with
//! it) and the merge its step (`apply` puts the value in the settings, whose origin is then the
//! layer's source under that path). Adding a key is adding a line and the settings' field.
//! Keys of a shape of their own (approval, the sandbox, providers, models, servers, hooks) are
//! read and merged by hand.

/// Declares a layer struct from its plain keys (`Option<Type>` fields: `None` leaves the value
/// below in force) and its other fields, with `read` and `apply` for the plain keys.
macro_rules! keys {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$doc:meta])* $path:literal => $field:ident: $ty:ty = $read:expr, $apply:expr; )*
        }
        $( others { $( $(#[$other_doc:meta])* pub $other:ident: $other_ty:ty, )* } )?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default)]
        pub struct $name {
            $( $(#[$doc])* pub $field: Option<$ty>, )*
            $( $( $(#[$other_doc])* pub $other: $other_ty, )* )?
        }

        impl $name {
            /// The paths of the plain keys, as declared.
            #[cfg(test)]
            const PLAIN_KEYS: &[&str] = &[$($path),*];

            /// Reads the plain key at `canonical` (its snake_case path) into its field, reporting
            /// a bad value under `path` (as written); false when no plain key has that path.
            fn read(&mut self, reader: &mut Reader<'_>, canonical: &str, path: &str, node: &Node) -> bool {
                match canonical {
                    $( $path => {
                        let read: fn(&mut Reader<'_>, &str, &Node) -> Option<$ty> = $read;
                        if let Some(value) = read(reader, path, node) {
                            self.$field = Some(value);
                        }
                    } )*
                    _ => return false,
                }
                true
            }

            /// Lays the plain keys this layer sets over `settings`, telling `set` each one's path.
            pub(crate) fn apply(&self, settings: &mut Settings, set: &mut dyn FnMut(&mut Settings, &str)) {
                $( if let Some(value) = &self.$field {
                    let apply: fn(&mut Settings, $ty) = $apply;
                    apply(settings, value.clone());
                    set(settings, $path);
                } )*
            }
        }
    };
}
