-- C2: a new post by a random user (its username set by the trigger)
\set u random(1, :nusers)
\set n random(1, 1000000000000)
\set t random(20, 80)
\set c random(200, 1000)
INSERT INTO posts (post_id, user_no, title, content, creation_date)
  VALUES ('wp' || :client_id || '.' || :n, :u,
          left(repeat('lorem ipsum dolor sit amet feed view post ', 3), :t),
          left(repeat('lorem ipsum dolor sit amet feed view post comment like ', 20), :c), now());
