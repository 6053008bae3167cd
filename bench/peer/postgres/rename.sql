-- A rename: the trigger rewrites the user's posts, comments and likes
\set u random(1, :nusers)
\set n random(1, 1000000000000)
UPDATE users SET username = 'r' || :n WHERE user_no = :u;
