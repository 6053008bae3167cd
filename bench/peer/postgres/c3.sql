-- C3: a comment on a random post; the trigger counts it on the post
\set p random(1, :nposts)
\set u random(1, :nusers)
\set c random(20, 300)
INSERT INTO comments (post_no, user_no, content, creation_date)
  VALUES (:p, :u, left(repeat('lorem ipsum dolor sit amet comment ', 10), :c), now());
